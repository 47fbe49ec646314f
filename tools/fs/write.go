package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// maxWriteBytes caps what one write_file or edit_file call may write.
const maxWriteBytes = 10 << 20

type writeInput struct {
	Path    string `json:"path" jsonschema:"file to write, relative to the workspace root; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

// WriteFile returns the write_file tool: it creates or replaces a file
// with the given content.
func WriteFile(ws *sandbox.Workspace) tool.Tool {
	return tool.New("write_file",
		"Create a file in the workspace, or replace all of an existing file's content. Missing parent directories are created. To change part of a file, use edit_file.",
		func(ctx context.Context, in writeInput) (tool.Output, error) { return writeFile(ctx, ws, in) },
		tool.WithAccess(tool.Mutating),
		tool.WithKeys(func(in writeInput) tool.Keys { return writeFileKeys(ws, in.Path) }),
	)
}

func writeFile(ctx context.Context, ws *sandbox.Workspace, in writeInput) (tool.Output, error) {
	rel, err := ws.Rel(in.Path)
	if err != nil {
		return tool.Output{}, err
	}
	if rel == "." {
		return tool.Output{}, &usageError{msg: "path is empty or the workspace root; give a file path such as notes/todo.md"}
	}
	if len(in.Content) > maxWriteBytes {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("content is %d bytes; write_file takes at most %d", len(in.Content), maxWriteBytes)}
	}
	old, err := ws.Stat(rel)
	switch {
	case err == nil && old.IsDir():
		return tool.Output{}, &usageError{msg: quote(rel) + " is a directory; give a file path"}
	case err != nil && !errors.Is(err, iofs.ErrNotExist):
		return tool.Output{}, explain(rel, err)
	}
	if err := ctx.Err(); err != nil {
		return tool.Output{}, err
	}
	var before []byte
	if old != nil && old.Size() <= maxMetaDiffInput && len(in.Content) <= maxMetaDiffInput {
		// For the UI's diff only: a file that cannot be read is written
		// all the same, without one.
		before = readBounded(ws, rel, maxMetaDiffInput)
	}
	if err := ws.WriteFile(rel, []byte(in.Content), 0o644); err != nil {
		return tool.Output{}, explain(rel, err)
	}
	lines := countLines([]byte(in.Content))
	if old == nil {
		return tool.Textf("created %s (%d lines, %d bytes)", rel, lines, len(in.Content)), nil
	}
	out := tool.Textf("replaced %s (was %d bytes; now %d lines, %d bytes)", rel, old.Size(), lines, len(in.Content))
	out.Meta = replacedMeta(rel, before, in.Content)
	return out, nil
}

// countLines counts lines as an editor shows them: a last line without a
// line end counts.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
