package fs

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

type editInput struct {
	Path       string `json:"path" jsonschema:"file to edit, relative to the workspace root"`
	OldString  string `json:"old_string,omitempty" jsonschema:"exact text to replace, whitespace and line ends included; it must occur exactly once unless replace_all is set"`
	NewString  string `json:"new_string,omitempty" jsonschema:"text to put in place of old_string"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string"`
	Patch      string `json:"patch,omitempty" jsonschema:"instead of old_string and new_string: a unified diff of this file (hunks starting with @@); each hunk is placed by its context and removed lines, so its line numbers may be approximate"`
}

// EditFile returns the edit_file tool: an exact, unique string replacement
// or a unified diff applied to one file. It reports the diff it made.
func EditFile(ws *sandbox.Workspace) tool.Tool {
	return tool.New("edit_file",
		"Change part of a text file in the workspace: replace old_string (exact text that occurs once) with new_string, or apply a unified diff given as patch. Returns the diff of the change. To create a file or replace all of it, use write_file.",
		func(ctx context.Context, in editInput) (tool.Output, error) { return editFile(ctx, ws, in) },
		tool.WithAccess(tool.Mutating),
		tool.WithKeys(func(in editInput) tool.Keys { return writeFileKeys(ws, in.Path) }),
	)
}

func editFile(ctx context.Context, ws *sandbox.Workspace, in editInput) (tool.Output, error) {
	switch {
	case in.Patch != "" && (in.OldString != "" || in.NewString != ""):
		return tool.Output{}, &usageError{msg: "give either patch or old_string and new_string, not both"}
	case in.Patch == "" && in.OldString == "":
		return tool.Output{}, &usageError{msg: "old_string is empty; give the exact text to replace (or a patch). To create a file, use write_file"}
	case in.Patch == "" && in.OldString == in.NewString:
		return tool.Output{}, &usageError{msg: "old_string and new_string are the same; there is nothing to change"}
	}
	rel, err := ws.Rel(in.Path)
	if err != nil {
		return tool.Output{}, err
	}
	fi, err := ws.Stat(rel)
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	if fi.IsDir() {
		return tool.Output{}, &usageError{msg: quote(rel) + " is a directory; give a file path"}
	}
	if fi.Size() > maxWriteBytes {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("%s is %d bytes; edit_file edits files of at most %d", quote(rel), fi.Size(), maxWriteBytes)}
	}
	data, err := ws.ReadFile(rel)
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	if isBinary(data[:min(len(data), sniffLen)]) {
		return tool.Output{}, &usageError{msg: binaryMessage(rel, data[:min(len(data), sniffLen)], int64(len(data)))}
	}
	old := string(data)
	var e *edit
	if in.Patch != "" {
		e, err = applyPatch(rel, old, in.Patch)
	} else {
		e, err = replace(rel, old, in.OldString, in.NewString, in.ReplaceAll)
	}
	if err != nil {
		return tool.Output{}, err
	}
	if len(e.content) > maxWriteBytes {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("the edit would make %s %d bytes; files may be at most %d", quote(rel), len(e.content), maxWriteBytes)}
	}
	if err := ctx.Err(); err != nil {
		return tool.Output{}, err
	}
	if err := ws.WriteFile(rel, []byte(e.content), fi.Mode().Perm()); err != nil {
		return tool.Output{}, explain(rel, err)
	}
	return tool.Textf("edited %s: %s\n%s", rel, e.summary, e.diff), nil
}

// edit is a change computed but not yet written.
type edit struct {
	content string
	summary string // what was done, for the model
	diff    string
}

// replace replaces old in content with new: the single occurrence, or
// every one when all is set.
func replace(rel, content, old, new string, all bool) (*edit, error) {
	at := occurrences(content, old)
	switch {
	case len(at) == 0:
		hint := "read_file the lines and copy the text exactly, whitespace and line ends included"
		if strings.Contains(content, "\r\n") && !strings.Contains(old, "\r\n") && strings.Contains(content, strings.ReplaceAll(old, "\n", "\r\n")) {
			hint = "the file uses CRLF line ends: write \\r\\n in old_string and new_string"
		}
		return nil, &usageError{msg: fmt.Sprintf("old_string was not found in %s; %s", rel, hint)}
	case len(at) > 1 && !all:
		return nil, &usageError{msg: fmt.Sprintf("old_string occurs %d times in %s, at lines %s; include more of the surrounding text to pick one, or set replace_all", len(at), rel, lineList(content, at))}
	}
	var b strings.Builder
	b.Grow(len(content) + len(at)*(len(new)-len(old)))
	prev := 0
	for _, i := range at {
		b.WriteString(content[prev:i])
		b.WriteString(new)
		prev = i + len(old)
	}
	b.WriteString(content[prev:])
	result := b.String()

	oldLines, newLines := splitLines(content), splitLines(result)
	changes := make([]change, 0, len(at))
	shift := 0
	oldAt, newAt := lineCounter{s: content}, lineCounter{s: result}
	for _, i := range at {
		j := i + shift
		// Each replacement rewrites the lines from its start to the line
		// holding the text that follows it.
		c := change{oldStart: oldAt.index(i), newStart: newAt.index(j)}
		c.oldEnd = min(oldAt.index(i+len(old))+1, len(oldLines))
		c.newEnd = min(newAt.index(j+len(new))+1, len(newLines))
		shift += len(new) - len(old)
		if n := len(changes); n > 0 && c.oldStart < changes[n-1].oldEnd {
			// Two replacements on one line make one change.
			changes[n-1].oldEnd, changes[n-1].newEnd = c.oldEnd, c.newEnd
			continue
		}
		changes = append(changes, c)
	}
	for i := range changes {
		changes[i] = changes[i].trim(oldLines, newLines)
	}
	summary := fmt.Sprintf("replaced 1 occurrence at line %d", lineIndex(content, at[0])+1)
	if len(at) > 1 {
		summary = fmt.Sprintf("replaced %d occurrences", len(at))
	}
	return &edit{content: result, summary: summary, diff: unifiedDiff(rel, oldLines, newLines, changes)}, nil
}

// occurrences returns the offsets of the non-overlapping occurrences of
// sub in s.
func occurrences(s, sub string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(sub)
	}
}

// lineIndex returns the 0-based line holding byte offset i of s.
func lineIndex(s string, i int) int { return strings.Count(s[:i], "\n") }

// lineCounter is lineIndex for offsets that never decrease, counting each
// byte once.
type lineCounter struct {
	s    string
	off  int
	line int
}

func (c *lineCounter) index(i int) int {
	c.line += strings.Count(c.s[c.off:i], "\n")
	c.off = i
	return c.line
}

func lineList(s string, at []int) string {
	const shown = 10
	parts := make([]string, 0, shown+1)
	for k, i := range at {
		if k == shown {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprint(lineIndex(s, i)+1))
	}
	return strings.Join(parts, ", ")
}
