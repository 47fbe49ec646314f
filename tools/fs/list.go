package fs

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// maxListEntries caps list_dir's output; a model that needs more narrows
// with glob.
const maxListEntries = 1000

type listInput struct {
	Path string `json:"path,omitempty" jsonschema:"directory to list, relative to the workspace root; default the root"`
}

// ListDir returns the list_dir tool: the entries of one directory, sorted
// by name, with their type and size.
func ListDir(ws *sandbox.Workspace) tool.Tool {
	return tool.New("list_dir",
		"List a directory of the workspace: one entry per line with its type (dir, file, link) and size in bytes, sorted by name. Directories end with /.",
		func(ctx context.Context, in listInput) (tool.Output, error) { return listDir(ws, in) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithKeys(func(listInput) tool.Keys { return readTreeKeys() }),
	)
}

func listDir(ws *sandbox.Workspace, in listInput) (tool.Output, error) {
	rel, err := ws.Rel(in.Path)
	if err != nil {
		return tool.Output{}, err
	}
	fi, err := ws.Stat(rel)
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	if !fi.IsDir() {
		return tool.Output{}, &usageError{msg: quote(rel) + " is a file, not a directory; use read_file to read it"}
	}
	entries, err := ws.ReadDir(rel)
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/ (%d entries)\n", rel, len(entries))
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "… %d more entries not shown; use glob to narrow\n", len(entries)-i)
			break
		}
		writeEntry(&b, ws, path.Join(rel, e.Name()), e)
	}
	return tool.Text(b.String()), nil
}

func writeEntry(b *strings.Builder, ws *sandbox.Workspace, p string, e iofs.DirEntry) {
	name := e.Name()
	switch t := e.Type(); {
	case t.IsDir():
		fmt.Fprintf(b, "dir   %s/\n", name)
	case t&iofs.ModeSymlink != 0:
		target, err := ws.Readlink(p)
		if err != nil {
			target = "?"
		}
		fmt.Fprintf(b, "link  %s -> %s\n", name, target)
	case t.IsRegular():
		// Lstat through the workspace rather than DirEntry.Info, which
		// stats by a host path.
		if fi, err := ws.Lstat(p); err == nil {
			fmt.Fprintf(b, "file  %s (%d bytes)\n", name, fi.Size())
		} else {
			fmt.Fprintf(b, "file  %s\n", name)
		}
	default:
		fmt.Fprintf(b, "other %s\n", name)
	}
}
