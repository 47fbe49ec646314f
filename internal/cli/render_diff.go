package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/llm"
)

// runDiffLines is how many lines of a file edit's diff rein run prints
// after the call; the rest is counted (rein chat's /diff shows it whole).
const runDiffLines = 20

// editDiff is the diff a finished file edit's result carries: edit_file's
// after its first line, write_file's (over a file it replaced) in its Meta.
// Other results give "".
func editDiff(r *llm.Result) string {
	if r == nil || r.IsError() {
		return ""
	}
	switch r.Name {
	case "edit_file":
		if i := strings.Index(r.Content, "\n--- "); i >= 0 {
			return r.Content[i+1:]
		}
	case "write_file":
		var m struct {
			Diff string `json:"diff"`
		}
		if json.Unmarshal(r.Meta, &m) == nil && strings.HasPrefix(m.Diff, "--- ") {
			return m.Diff
		}
	}
	return ""
}

// diff prints a file edit's diff under its call: the first runDiffLines
// lines, added lines green and removed red on a terminal, control
// characters made visible so a file's text cannot drive the terminal.
func (h *human) diff(d string) {
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	shown := lines[:min(len(lines), runDiffLines)]
	for _, l := range shown {
		l = visibleText(l)
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
			l = h.bold(l)
		case strings.HasPrefix(l, "+"):
			l = h.paint("32", l)
		case strings.HasPrefix(l, "-"):
			l = h.paint("31", l)
		case strings.HasPrefix(l, "@@"):
			l = h.paint("36", l)
		}
		h.writeLine("    " + l)
	}
	if n := len(lines) - len(shown); n > 0 {
		h.writeLine(h.dim(fmt.Sprintf("    … %s more", plural(n, "line"))))
	}
}

// paint colours s with the SGR code on a terminal.
func (h *human) paint(code, s string) string {
	if !h.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// visibleText is s as a terminal line shows it: what would act on the
// terminal or hide how the text reads made visible (termtext.Visible), a
// tab a space.
func visibleText(s string) string {
	return strings.ReplaceAll(termtext.Visible(s), "\t", " ")
}
