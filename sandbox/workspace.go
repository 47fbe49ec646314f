package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Workspace is a directory that file tools may use and may not leave. Every
// method resolves its path inside the directory with os.Root, which opens
// each component relative to the one before and refuses to follow a link
// out, so a link swapped between a check and a use cannot lead outside.
//
// Paths given to methods are relative to the workspace root; an absolute
// path is accepted when it names something inside the workspace. Paths in
// results and errors are relative, slash-separated, and never show where
// the workspace lives on the host. A Workspace is safe for concurrent use.
type Workspace struct {
	root *os.Root
	// dirs are the absolute forms of the root accepted in absolute paths:
	// as given and with links resolved.
	dirs []string
}

// Open returns the workspace rooted at dir, which must be a directory.
func Open(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace %s: %w", dir, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace %s: %w", dir, err)
	}
	dirs := []string{resolved}
	if abs != resolved {
		dirs = append(dirs, abs)
	}
	return &Workspace{root: root, dirs: dirs}, nil
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Dir returns the absolute path of the workspace root, links resolved. It
// is for the host (running programs in the workspace), not for a model.
func (w *Workspace) Dir() string { return w.dirs[0] }

// Rel returns name as a clean slash-separated path relative to the
// workspace root ("." for the root), or an *EscapeError when name is
// absolute outside the workspace or climbs out with "..". It looks at the
// text only; links are checked when the path is used.
func (w *Workspace) Rel(name string) (string, error) {
	p := filepath.FromSlash(name)
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		p = filepath.Clean(p)
		rel, ok := w.under(p)
		if !ok {
			return "", &EscapeError{Path: name, Reason: ReasonAbsolute}
		}
		p = rel
	}
	p = filepath.Clean(p)
	if !filepath.IsLocal(p) {
		return "", &EscapeError{Path: name, Reason: ReasonDotDot}
	}
	return filepath.ToSlash(p), nil
}

func (w *Workspace) under(abs string) (string, bool) {
	for _, d := range w.dirs {
		if abs == d {
			return ".", true
		}
		if rest, ok := strings.CutPrefix(abs, d+string(filepath.Separator)); ok {
			return rest, true
		}
	}
	return "", false
}

// Open opens the named file for reading.
func (w *Workspace) Open(name string) (*os.File, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	f, err := w.root.Open(rel)
	return f, mapErr(name, err)
}

// Stat returns the file's information, following links inside the
// workspace.
func (w *Workspace) Stat(name string) (fs.FileInfo, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(rel)
	return fi, mapErr(name, err)
}

// Lstat returns the file's information without following a final link.
func (w *Workspace) Lstat(name string) (fs.FileInfo, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Lstat(rel)
	return fi, mapErr(name, err)
}

// Readlink returns the target of the named link as stored, which may point
// anywhere; following it is what the other methods refuse.
func (w *Workspace) Readlink(name string) (string, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return "", err
	}
	s, err := w.root.Readlink(rel)
	return s, mapErr(name, err)
}

// ReadDir returns the entries of the named directory sorted by name.
func (w *Workspace) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// ReadFile returns the named file's contents.
func (w *Workspace) ReadFile(name string) ([]byte, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	b, err := w.root.ReadFile(rel)
	return b, mapErr(name, err)
}

// WriteFile writes data to the named file, creating it with perm (before
// umask) and its missing parent directories, or truncating it. A link
// inside the workspace is written through.
func (w *Workspace) WriteFile(name string, data []byte, perm fs.FileMode) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return mapErr(name, err)
		}
	}
	return mapErr(name, w.root.WriteFile(rel, data, perm))
}

// MkdirAll creates the named directory and its missing parents.
func (w *Workspace) MkdirAll(name string, perm fs.FileMode) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	return mapErr(name, w.root.MkdirAll(rel, perm))
}

// FS returns the workspace as a file system (for io/fs functions and glob
// libraries). Its paths are the relative slash paths of fs.ValidPath; it
// refuses links out like the methods do.
func (w *Workspace) FS() fs.FS { return w.root.FS() }

// Walk calls fn for the named file or directory and everything under it,
// in lexical order, as fs.WalkDir does: paths are relative to the workspace
// root, and links under name are reported, not followed. Name itself may be
// a link to a directory inside the workspace. Walk stops with ctx's error
// once ctx is done.
func (w *Workspace) Walk(ctx context.Context, name string, fn fs.WalkDirFunc) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	fi, err := w.root.Stat(rel)
	if err != nil {
		return mapErr(name, err)
	}
	if !fi.IsDir() {
		err := fn(rel, fs.FileInfoToDirEntry(fi), nil)
		if err == fs.SkipDir || err == fs.SkipAll {
			return nil
		}
		return err
	}
	// Walking a root opened at name keeps a link swapped mid-walk inside,
	// and lets name be a link to a directory.
	sub, err := w.root.OpenRoot(rel)
	if err != nil {
		return mapErr(name, err)
	}
	defer sub.Close()
	err = fs.WalkDir(sub.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		p = path.Join(rel, p)
		return fn(p, d, mapErr(p, err))
	})
	return mapErr(name, err)
}
