package kb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// ignoreRule is one line of a .gitignore: a glob, relative to the
// directory of its file, that leaves out what it matches, or takes back
// (negate) what an earlier rule left out.
type ignoreRule struct {
	glob    string
	negate  bool
	dirOnly bool
}

// maxIgnoreFile bounds a .gitignore read: a huge one is a mistake or an
// attack, not a list of patterns.
const maxIgnoreFile = 1 << 20

// readIgnore reads the .gitignore of dir, if any. Lines are as git reads
// them: blank lines and # comments skipped, ! negates, a trailing / matches
// directories only, a pattern with a / elsewhere is anchored to dir, one
// without matches a name at any depth below it.
func readIgnore(dir string) ([]ignoreRule, error) {
	path := filepath.Join(dir, ".gitignore")
	// A repository is not trusted: a .gitignore that is a link (to
	// /dev/zero, say), a FIFO or a device is never opened, and no more
	// than the bound is read.
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; left unread", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIgnoreFile {
		return nil, fmt.Errorf("%s/.gitignore is over %d bytes; left unread", dir, maxIgnoreFile)
	}
	return parseIgnore(b), nil
}

func parseIgnore(b []byte) []ignoreRule {
	var rules []ignoreRule
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		line = strings.TrimPrefix(line, `\`) // \# and \! stand for themselves
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			line = strings.TrimPrefix(line, "/")
		} else {
			line = "**/" + line
		}
		if !doublestar.ValidatePattern(line) {
			continue
		}
		r.glob = line
		rules = append(rules, r)
	}
	return rules
}

// ignorer answers whether a path under a walked root is left out by the
// .gitignore files of the directories from the root down to it, or by the
// --exclude globs.
type ignorer struct {
	root    string
	rules   map[string][]ignoreRule // by directory, absolute
	exclude []string
}

func newIgnorer(root string, exclude []string) *ignorer {
	return &ignorer{root: root, rules: map[string][]ignoreRule{}, exclude: exclude}
}

// enter reads the .gitignore of a directory the walk entered.
func (g *ignorer) enter(dir string) error {
	rules, err := readIgnore(dir)
	if len(rules) > 0 {
		g.rules[dir] = rules
	}
	return err
}

// ignored reports whether p (absolute, under the root) is left out, and
// why.
func (g *ignorer) ignored(p string, isDir bool) (bool, string) {
	rel, err := filepath.Rel(g.root, p)
	if err != nil {
		return false, ""
	}
	rel = filepath.ToSlash(rel)
	for _, x := range g.exclude {
		if matchGlob(x, rel) {
			return true, "--exclude " + x
		}
	}
	// The rules of each directory from the root down; the last one that
	// matches decides.
	out, why := false, ""
	dirs := []string{g.root}
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		dirs = append(dirs, filepath.Join(g.root, filepath.FromSlash(d)))
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		rules := g.rules[dirs[i]]
		if len(rules) == 0 {
			continue
		}
		sub, err := filepath.Rel(dirs[i], p)
		if err != nil {
			continue
		}
		sub = filepath.ToSlash(sub)
		for _, r := range rules {
			if r.dirOnly && !isDir {
				continue
			}
			if ok, _ := doublestar.Match(r.glob, sub); ok {
				out = !r.negate
				why = ".gitignore"
			}
		}
	}
	return out, why
}

// matchGlob matches an --exclude glob against a path relative to the
// root: a glob with a / against the whole path, one without against each
// name on it (so "*.log" and "testdata" work at any depth).
func matchGlob(glob, rel string) bool {
	if strings.Contains(glob, "/") {
		ok, _ := doublestar.Match(strings.TrimPrefix(glob, "/"), rel)
		return ok
	}
	for name := range strings.SplitSeq(rel, "/") {
		if ok, _ := doublestar.Match(glob, name); ok {
			return true
		}
	}
	return false
}
