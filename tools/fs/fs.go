// Package fs provides the workspace file tools (DESIGN §7.3): list_dir,
// read_file, grep, glob, write_file and edit_file. Every path goes through a
// sandbox.Workspace, so nothing outside the workspace is read or written,
// and every result names files by their path relative to the workspace.
package fs

import (
	"errors"
	iofs "io/fs"
	"os/exec"
	"sync"
	"syscall"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// Tools returns every file tool of ws: the read-only ones, then write_file
// and edit_file. grep uses ripgrep when it is installed.
func Tools(ws *sandbox.Workspace) []tool.Tool {
	return append(ReadOnlyTools(ws), WriteFile(ws), EditFile(ws))
}

// ReadOnlyTools returns the file tools of ws that change nothing: list_dir,
// read_file, glob and grep.
func ReadOnlyTools(ws *sandbox.Workspace) []tool.Tool {
	return []tool.Tool{ListDir(ws), ReadFile(ws), Glob(ws), Grep(ws, Ripgrep())}
}

// Ripgrep returns the path of the rg program, or "" when it is not
// installed.
func Ripgrep() string { return lookRipgrep() }

var lookRipgrep = sync.OnceValue(func() string {
	p, err := exec.LookPath("rg")
	if err != nil {
		return ""
	}
	return p
})

// Resource keys (tool.Keys). A tool that reads one file declares its file
// key; a tool that reads a tree declares treeKey; a write declares both its
// file key and treeKey, so it is ordered against every reader that could
// see it. Writes therefore run one at a time, which also keeps two of them
// from racing to create the same parent directory.
const treeKey = "files"

func fileKey(rel string) string { return "file:" + rel }

func readFileKeys(ws *sandbox.Workspace, name string) tool.Keys {
	rel, err := ws.Rel(name)
	if err != nil {
		return tool.Keys{}
	}
	return tool.Keys{Reads: []string{fileKey(rel)}}
}

func readTreeKeys() tool.Keys { return tool.Keys{Reads: []string{treeKey}} }

func writeFileKeys(ws *sandbox.Workspace, name string) tool.Keys {
	rel, err := ws.Rel(name)
	if err != nil {
		return tool.Keys{Writes: []string{treeKey}}
	}
	return tool.Keys{Writes: []string{fileKey(rel), treeKey}}
}

// usageError is an error whose text tells the model what to do instead; it
// wraps the cause so callers can still branch on it.
type usageError struct {
	msg string
	err error
}

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return e.err }

// explain rewrites a workspace error about rel into advice. Escapes are
// already explained by the sandbox.
func explain(rel string, err error) error {
	switch {
	case errors.Is(err, sandbox.ErrEscape):
		return err
	case errors.Is(err, iofs.ErrNotExist):
		return &usageError{"no file or directory " + quote(rel) + " in the workspace; list_dir or glob shows what exists", err}
	case errors.Is(err, syscall.ENOTDIR):
		return &usageError{"a parent of " + quote(rel) + " is a file, not a directory", err}
	case errors.Is(err, iofs.ErrPermission):
		return &usageError{quote(rel) + " cannot be accessed: permission denied", err}
	}
	return err
}

func quote(rel string) string { return "\"" + rel + "\"" }
