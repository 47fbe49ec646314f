package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/llm"
)

// Fold limits: a diff longer than this shows its first lines and a hint
// (Ctrl-O shows it whole).
const (
	cardDiffLines     = 12
	approvalDiffLines = 20
	// maxDiffInput bounds what the chat diffs itself: a larger file is
	// summarized instead of diffed on a key press.
	maxDiffInput = 256 << 10
)

// editArgs are the arguments of write_file and edit_file the chat reads.
type editArgs struct {
	Path       string  `json:"path"`
	Content    *string `json:"content"`
	OldString  string  `json:"old_string"`
	NewString  string  `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
	Patch      string  `json:"patch"`
}

// isEdit says the tool writes files the chat shows as diffs.
func isEdit(name string) bool { return name == "write_file" || name == "edit_file" }

// propose returns the change a write_file or edit_file call would make, as
// a unified diff, for the approval box: the file is read through the
// sandbox (nothing is written) and the change applied to it. Without a
// workspace, or when the file cannot be read, the call's own text is
// diffed. Other tools get "".
// It returns the file's content before the call too, when it was read
// (known).
func (m *Model) propose(name, args string) (diff, before string, known bool) {
	if !isEdit(name) {
		return "", "", false
	}
	var a editArgs
	if json.Unmarshal([]byte(args), &a) != nil || a.Path == "" {
		return "", "", false
	}
	if name == "edit_file" && a.Patch != "" {
		return a.Patch, "", false
	}
	old, known := m.readFile(a.Path)
	switch name {
	case "write_file":
		if a.Content == nil || len(*a.Content) > maxDiffInput {
			return "", "", false
		}
		if !known {
			return unified(a.Path, "", *a.Content, true), "", false
		}
		return unified(a.Path, old, *a.Content, false), old, true
	default:
		if known && a.OldString != "" && strings.Contains(old, a.OldString) {
			n := 1
			if a.ReplaceAll {
				n = -1
			}
			return unified(a.Path, old, strings.Replace(old, a.OldString, a.NewString, n), false), old, true
		}
		return unified(a.Path, a.OldString, a.NewString, false), "", false
	}
}

// replacedDiff is the diff of a write_file call that replaced a file whose
// content before the call the chat read (at its approval).
func replacedDiff(args, before string) string {
	var a editArgs
	if json.Unmarshal([]byte(args), &a) != nil || a.Content == nil || len(*a.Content) > maxDiffInput {
		return ""
	}
	return unified(a.Path, before, *a.Content, false)
}

// readFile reads a workspace file for a diff; known is false when there is
// no workspace or the file cannot be read (missing, denied, too large).
func (m *Model) readFile(name string) (text string, known bool) {
	ws := m.opts.Workspace
	if ws == nil {
		return "", false
	}
	fi, err := ws.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		// A new file: everything is added.
		return "", false
	}
	if err != nil || fi.IsDir() || fi.Size() > maxDiffInput {
		return "", false
	}
	b, err := ws.ReadFile(name)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// unified diffs two texts of the file name; created marks a new file.
func unified(name, old, new string, created bool) string {
	from := "a/" + name
	if created {
		from = "/dev/null"
	}
	return udiff.Unified(from, "b/"+name, old, new)
}

// resultDiff is the diff to show in a finished card: edit_file reports its
// diff after its first line; write_file's new file is all added lines.
func resultDiff(name, args, content string) string {
	switch name {
	case "edit_file":
		if i := strings.Index(content, "\n--- "); i >= 0 {
			return content[i+1:]
		}
	case "write_file":
		var a editArgs
		if strings.HasPrefix(content, "created ") && json.Unmarshal([]byte(args), &a) == nil && a.Content != nil && len(*a.Content) <= maxDiffInput {
			return unified(a.Path, "", *a.Content, true)
		}
	}
	return ""
}

// metaDiff is the diff a result's Meta carries: write_file's over a file
// it replaced (tools/fs.WriteMeta), bounded and redacted by the tool and
// the dispatcher. A Meta without one, or not JSON, gives "".
func metaDiff(meta []byte) string {
	if len(meta) == 0 {
		return ""
	}
	var m struct {
		Diff string `json:"diff"`
	}
	if json.Unmarshal(meta, &m) != nil || !strings.HasPrefix(m.Diff, "--- ") {
		return ""
	}
	return m.Diff
}

// withMetaDiff gives the finished card of result r the diff its Meta
// carries when the card has none of its own.
func (c *card) withMetaDiff(r *llm.Result) {
	if c != nil && r != nil && c.diff == "" && c.state == cardDone && isEdit(c.name) {
		c.diff = metaDiff(r.Meta)
	}
}

// colorDiff colours a unified diff: added lines green, removed red, hunk
// heads cyan, file heads bold.
func colorDiff(d string, s styles) string {
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	for i, l := range lines {
		// A file's text may hold escape sequences: shown, never obeyed.
		l = printable(l)
		lines[i] = l
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
			lines[i] = s.bold.Render(l)
		case strings.HasPrefix(l, "@@"):
			lines[i] = s.hunk.Render(l)
		case strings.HasPrefix(l, "+"):
			lines[i] = s.add.Render(l)
		case strings.HasPrefix(l, "-"):
			lines[i] = s.del.Render(l)
		}
	}
	return strings.Join(lines, "\n")
}

// foldDiff returns the diff coloured and cut to limit lines, with a line
// saying how many were left out; folded says it was cut.
func foldDiff(d string, limit int, s styles) (out string, folded bool) {
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	if limit <= 0 || len(lines) <= limit {
		return colorDiff(d, s), false
	}
	head := colorDiff(strings.Join(lines[:limit], "\n"), s)
	return head + "\n" + s.dim.Render(fmt.Sprintf("… %d more lines · ctrl+o to expand", len(lines)-limit)), true
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// withoutDirectives drops the engine's own instructions from text shown
// to the user: paragraphs the engine addresses to the model ("[rein] …",
// "[ask_user resolved] …") are not what the user or the model wrote.
func withoutDirectives(text string) string {
	paras := strings.Split(text, "\n\n")
	out := paras[:0]
	for _, p := range paras {
		if isDirective(p) {
			continue
		}
		out = append(out, p)
	}
	return strings.TrimSpace(strings.Join(out, "\n\n"))
}

// isDirective says a paragraph is the engine's instruction to the model.
func isDirective(p string) bool {
	p = strings.TrimSpace(p)
	return strings.HasPrefix(p, "[rein]") || strings.HasPrefix(p, "[ask_user resolved]")
}

// printable is s as the chat shows text a file, a tool or a model wrote:
// what would act on the terminal (escape sequences, controls) or make the
// text read otherwise than it is (bidi overrides and isolates, zero-width
// characters) shown as marks by termtext.Visible, the one function every
// terminal renderer uses; a tab becomes spaces.
func printable(s string) string {
	s = termtext.Visible(s)
	if strings.IndexByte(s, '\t') < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\t", "    ")
}

// Changes is what a thread's calls changed in the workspace, from its
// history: each edit_file's diff and each file write_file created or
// replaced, in the order they ran (a file replaced before write_file gave
// its diff, or too large for one, is named). Failed calls changed nothing.
func Changes(items []llm.Item) string {
	calls := make(map[string]*llm.Call)
	var b strings.Builder
	for i := range items {
		for _, c := range items[i].Calls() {
			calls[c.ID] = c
		}
		for _, p := range items[i].Parts {
			r := p.Result
			if p.Kind != llm.PartResult || r == nil || r.IsError() || !isEdit(r.Name) {
				continue
			}
			c := calls[r.CallID]
			if c == nil {
				continue
			}
			d := resultDiff(r.Name, string(c.Args), r.Content)
			if d == "" {
				d = metaDiff(r.Meta)
			}
			if d != "" {
				b.WriteString(strings.TrimRight(d, "\n") + "\n")
			} else if strings.HasPrefix(r.Content, "replaced ") {
				first, _, _ := strings.Cut(r.Content, "\n")
				b.WriteString("# " + first + "\n")
			}
		}
	}
	return b.String()
}
