// Package sources is the files a user attaches to a turn (`--attach FILE`,
// DESIGN §7.3): each gets an id (s1, s2, …) listed in the system prompt,
// and read_source reads one by id, a page at a time. read_source is
// mounted when the turn has sources (has_sources).
package sources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/tool"
)

// Source is an attached file, read when it was attached: the turn sees the
// content as it was then, even if the file changes.
type Source struct {
	ID   string
	Name string // the path as the user gave it
	Text string
	// Lines counts the lines of Text.
	Lines int
}

// Limits.
const (
	// MaxSize is the largest file that can be attached.
	MaxSize = 4 << 20
	// PageChars bounds one read_source result.
	PageChars = 50_000
	// ReadName is the tool's name.
	ReadName = "read_source"
)

// Load reads the files at paths as the sources s1, s2, … in order. A file
// that is missing, not a regular file, larger than MaxSize or not text is an
// error naming it: the user asked for it, so it is not silently dropped.
func Load(paths []string) ([]Source, error) {
	out := make([]Source, 0, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("attach %s: not a regular file", p)
		}
		if fi.Size() > MaxSize {
			return nil, fmt.Errorf("attach %s: %d bytes, more than the %d a source may have", p, fi.Size(), MaxSize)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", p, err)
		}
		if !utf8.Valid(b) || strings.ContainsRune(string(b), 0) {
			return nil, fmt.Errorf("attach %s: not a text file (only text can be attached)", p)
		}
		text := strings.ReplaceAll(string(b), "\r\n", "\n")
		out = append(out, Source{ID: "s" + strconv.Itoa(i+1), Name: filepath.ToSlash(p), Text: text, Lines: countLines(text)})
	}
	return out, nil
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

type readInput struct {
	SourceID  string `json:"source_id" jsonschema:"the source's id, such as s1"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"the first line to read, 1-based (default 1); results say where the next page starts"`
}

// Read returns the read_source tool over srcs.
func Read(srcs []Source) tool.Tool {
	ids := make([]string, len(srcs))
	for i, s := range srcs {
		ids[i] = s.ID + " = " + s.Name
	}
	return tool.New(ReadName,
		"Read a source the user attached to this message, by id; long sources come a page at a time. Attached: "+strings.Join(ids, "; ")+".",
		func(_ context.Context, in readInput) (tool.Output, error) { return read(srcs, in) },
		tool.WithAccess(tool.ReadOnly))
}

func read(srcs []Source, in readInput) (tool.Output, error) {
	var src *Source
	for i := range srcs {
		if srcs[i].ID == strings.TrimSpace(in.SourceID) {
			src = &srcs[i]
		}
	}
	if src == nil {
		ids := make([]string, len(srcs))
		for i, s := range srcs {
			ids[i] = s.ID
		}
		return failed(fmt.Sprintf("no source %q; attached: %s", in.SourceID, strings.Join(ids, ", ")))
	}
	start := max(in.StartLine, 1)
	if in.StartLine < 0 || (start > src.Lines && src.Lines > 0) {
		return failed(fmt.Sprintf("start_line %d: %s has lines 1 to %d", in.StartLine, src.ID, src.Lines))
	}
	lines := strings.SplitAfter(src.Text, "\n")
	var b strings.Builder
	end := start - 1
	for _, l := range lines[start-1 : max(src.Lines, start-1)] {
		if b.Len()+len(l) > PageChars && b.Len() > 0 {
			break
		}
		if len(l) > PageChars {
			// One enormous line: cut it on a character boundary.
			cut := PageChars
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			l = l[:cut] + "…[line cut]\n"
		}
		b.WriteString(l)
		end++
	}
	head := fmt.Sprintf("%s = %s, lines %d-%d of %d", src.ID, src.Name, start, end, src.Lines)
	if src.Lines == 0 {
		head = fmt.Sprintf("%s = %s is empty", src.ID, src.Name)
	}
	text := head + "\n\n" + b.String()
	if end < src.Lines {
		text += fmt.Sprintf("\n[more: call read_source with source_id %s and start_line %d]", src.ID, end+1)
	}
	return tool.Text(strings.TrimRight(text, "\n")), nil
}

// Gate computes has_sources: on when the turn has sources. The sources are
// loaded before composing (Load refuses what it cannot read), so a load
// error passed here fails the gate closed.
func Gate(srcs []Source, loadErr error) tool.Gate {
	return func(context.Context) (bool, error) {
		if loadErr != nil {
			return false, loadErr
		}
		return len(srcs) > 0, nil
	}
}

// Prompt is the sources block of the system prompt.
func Prompt(srcs []Source) string {
	if len(srcs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The user attached these sources to the message; read them with read_source:\n")
	for _, s := range srcs {
		fmt.Fprintf(&b, "- %s = %s (%d lines)\n", s.ID, s.Name, s.Lines)
	}
	return strings.TrimRight(b.String(), "\n")
}

func failed(msg string) (tool.Output, error) { return tool.Output{Text: msg, Failed: true}, nil }
