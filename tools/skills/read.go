package skills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/reinhq/rein/tool"
)

// ReadName is the read_skill tool's name.
const ReadName = "read_skill"

// maxListed bounds the files listed beside a SKILL.md.
const maxListed = 50

type readInput struct {
	Name string `json:"name" jsonschema:"the skill's name, as listed in the prompt"`
	File string `json:"file,omitempty" jsonschema:"a file in the skill's directory, relative to it (default SKILL.md)"`
}

// Read returns the read_skill tool over the skills of c.
func Read(c *Catalog) tool.Tool {
	return tool.New(ReadName,
		"Load a skill's instructions (its SKILL.md) or a file beside it, such as a reference or a script the SKILL.md names.",
		func(ctx context.Context, in readInput) (tool.Output, error) { return read(c, in) },
		tool.WithAccess(tool.ReadOnly))
}

func read(c *Catalog, in readInput) (tool.Output, error) {
	s, ok := c.Get(strings.TrimSpace(in.Name))
	if !ok {
		var names []string
		for _, s := range c.Skills {
			names = append(names, s.Name)
		}
		return failed(fmt.Sprintf("no skill %q; skills: %s", in.Name, strings.Join(names, ", ")))
	}
	file := strings.TrimSpace(in.File)
	if file == "" {
		file = FileName
	}
	// os.Root refuses paths that leave the directory, through ".." or
	// through a link pointing outside.
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return tool.Output{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	defer root.Close()
	clean := path.Clean(strings.ReplaceAll(file, "\\", "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return failed(fmt.Sprintf("file %q is outside the skill; give a path relative to the skill's directory", file))
	}
	// Without waiting: a FIFO would wait for a writer (refused below).
	f, err := root.OpenFile(clean, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failed(fmt.Sprintf("the skill %s has no file %q; files: %s", s.Name, clean, strings.Join(listFiles(root), ", ")))
	case err != nil:
		// Links leading out of the skill's directory end here too.
		return failed(fmt.Sprintf("cannot read %q of the skill %s: %v", clean, s.Name, err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tool.Output{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	if fi.IsDir() {
		return failed(fmt.Sprintf("%q is a directory; files: %s", clean, strings.Join(listFiles(root), ", ")))
	}
	if !fi.Mode().IsRegular() {
		return failed(fmt.Sprintf("%q is not a regular file (%v)", clean, fi.Mode().Type()))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSkillFile+1))
	if err != nil {
		return tool.Output{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	if len(b) > maxSkillFile {
		return failed(fmt.Sprintf("%s is larger than %d bytes; skills should keep files small", clean, maxSkillFile))
	}
	if !utf8.Valid(b) || strings.ContainsRune(string(b), 0) {
		return failed(fmt.Sprintf("%s is not a text file", clean))
	}
	text := string(b)
	if clean == FileName {
		if others := listFiles(root); len(others) > 1 {
			text += "\n\n[files beside SKILL.md, readable with read_skill file=…: " + strings.Join(others, ", ") + "]"
		}
	}
	return tool.Text(text), nil
}

// listFiles lists the skill's files, relative and sorted, at most
// maxListed; hidden entries are left out.
func listFiles(root *os.Root) []string {
	var out []string
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		if len(out) >= maxListed {
			return fs.SkipAll
		}
		return nil
	})
	return out
}

// Gate computes has_skills from loading the catalog: on when it holds a
// skill. A load error fails the gate closed.
func Gate(c *Catalog, loadErr error) tool.Gate {
	return func(context.Context) (bool, error) {
		if loadErr != nil {
			return false, loadErr
		}
		return c != nil && len(c.Skills) > 0, nil
	}
}

func failed(msg string) (tool.Output, error) { return tool.Output{Text: msg, Failed: true}, nil }
