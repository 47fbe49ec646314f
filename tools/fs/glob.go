package fs

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

const maxGlobResults = 500

type globInput struct {
	Pattern string `json:"pattern" jsonschema:"glob such as **/*.go or src/*.{ts,tsx}; * matches within a name, ** any number of directories"`
	Path    string `json:"path,omitempty" jsonschema:"directory the pattern is relative to, relative to the workspace root; default the root"`
}

// Glob returns the glob tool: the workspace paths matching a pattern,
// sorted, directories ending with /.
func Glob(ws *sandbox.Workspace) tool.Tool {
	return tool.New("glob",
		"Find workspace files and directories by path pattern (** for any depth, {a,b} for alternatives). Shows paths from the workspace root, sorted; directories end with /. .git is left out unless the pattern names it.",
		func(ctx context.Context, in globInput) (tool.Output, error) { return glob(ctx, ws, in) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithKeys(func(globInput) tool.Keys { return readTreeKeys() }),
	)
}

func glob(ctx context.Context, ws *sandbox.Workspace, in globInput) (tool.Output, error) {
	if in.Pattern == "" {
		return tool.Output{}, &usageError{msg: "pattern is empty; give a glob such as **/*.go"}
	}
	if strings.HasPrefix(in.Pattern, "/") || slices.Contains(strings.Split(in.Pattern, "/"), "..") {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("pattern %q must be relative and must not contain ..; use path to choose the directory", in.Pattern)}
	}
	if !doublestar.ValidatePattern(in.Pattern) {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("pattern %q is not a valid glob", in.Pattern)}
	}
	rel, err := ws.Rel(in.Path)
	if err != nil {
		return tool.Output{}, err
	}
	fi, err := ws.Stat(rel)
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	if !fi.IsDir() {
		return tool.Output{}, &usageError{msg: quote(rel) + " is a file; path must be a directory"}
	}
	fsys, err := iofs.Sub(ws.FS(), rel)
	if err != nil {
		return tool.Output{}, err
	}
	wantGit := strings.Contains(in.Pattern, ".git")
	var found []string
	total := 0
	err = doublestar.GlobWalk(fsys, in.Pattern, func(p string, d iofs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !wantGit && slices.Contains(strings.Split(p, "/"), ".git") {
			return nil
		}
		total++
		// The walk goes in lexical order, so the first results are the
		// ones a sorted list would show.
		if len(found) < maxGlobResults {
			name := path.Join(rel, p)
			if d.IsDir() {
				name += "/"
			}
			found = append(found, name)
		}
		return nil
	}, doublestar.WithNoFollow())
	if err != nil {
		return tool.Output{}, err
	}
	if total == 0 {
		return tool.Textf("no paths match %q in %s/\n", in.Pattern, rel), nil
	}
	slices.Sort(found)
	var b strings.Builder
	for _, p := range found {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	if total > len(found) {
		fmt.Fprintf(&b, "(%d of %d paths shown; narrow the pattern or path)\n", len(found), total)
	}
	return tool.Text(b.String()), nil
}
