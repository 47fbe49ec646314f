package sandbox

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
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
//
// A workspace has a deny list (DenyRules): its methods refuse to read
// what it denies reading, or write what it denies writing, with a
// *DeniedError, also when a link leads there; walks leave denied paths
// out. Stat, Lstat and Readlink are not refused: a denied path may be
// seen, not opened.
type Workspace struct {
	root *os.Root
	// dirs are the absolute forms of the root accepted in absolute paths:
	// as given and with links resolved.
	dirs []string
	deny *DenyList
}

// Open returns the workspace rooted at dir, which must be a directory,
// with the default deny list.
func Open(dir string) (*Workspace, error) { return OpenOptions(dir, Options{}) }

// OpenOptions returns the workspace rooted at dir, which must be a
// directory, with the default deny list changed by o.Deny.
func OpenOptions(dir string, o Options) (*Workspace, error) {
	deny, err := NewDenyList(o.Deny)
	if err != nil {
		return nil, err
	}
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
	return &Workspace{root: root, dirs: dirs, deny: deny}, nil
}

// Deny returns the workspace's deny list, for commands run in it
// (Command.Deny).
func (w *Workspace) Deny() *DenyList { return w.deny }

// Check returns the error the workspace's methods give for name, before
// opening it, when reading it (write false) or writing it is refused: an
// *EscapeError when it leads outside the workspace by its text, or a
// *DeniedError when the deny list covers it or the path its links lead
// to. Programs that read the workspace without its methods (ripgrep) use
// it to leave denied files out.
func (w *Workspace) Check(name string, write bool) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	return w.check(name, rel, write)
}

func (w *Workspace) check(name, rel string, write bool) error {
	if w.deny.Empty() {
		return nil
	}
	if err := w.deny.Check(name, rel, write); err != nil {
		return err
	}
	if real := w.resolve(rel); real != rel {
		return w.deny.Check(name, real, write)
	}
	return nil
}

// maxLinks bounds the links resolve follows, as the kernel's 40.
const maxLinks = 40

// resolve returns rel with the links in it followed, as far as they lead
// inside the workspace and exist; the rest is kept as written. The deny
// list is checked against it, so a link to a denied file is denied too.
func (w *Workspace) resolve(rel string) string {
	if rel == "." {
		return rel
	}
	parts := strings.Split(rel, "/")
	done := ""
	for i, hops := 0, 0; i < len(parts); i++ {
		next := path.Join(done, parts[i])
		fi, err := w.root.Lstat(next)
		if err != nil {
			return path.Join(append([]string{next}, parts[i+1:]...)...)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		target, err := w.root.Readlink(next)
		if hops++; err != nil || hops > maxLinks {
			return rel
		}
		var t string
		if filepath.IsAbs(target) {
			r, ok := w.under(filepath.Clean(target))
			if !ok {
				return rel // outside: os.Root refuses it
			}
			t = filepath.ToSlash(r)
		} else {
			t = path.Join(path.Dir(next), filepath.ToSlash(target))
		}
		if !filepath.IsLocal(filepath.FromSlash(t)) && t != "." {
			return rel
		}
		parts = append(strings.Split(t, "/"), parts[i+1:]...)
		done, i = "", -1
	}
	if done == "" {
		return "."
	}
	return done
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
	return w.openRead(name, rel)
}

// openRead opens rel for reading. The deny list is checked against rel,
// then against the path of the file opened, as the kernel names it, so a
// link to a denied file is refused whatever the link was a moment before.
func (w *Workspace) openRead(name, rel string) (*os.File, error) {
	if w.deny.Empty() {
		f, err := w.root.Open(rel)
		return f, mapErr(name, err)
	}
	if err := w.deny.Check(name, rel, false); err != nil {
		return nil, err
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return nil, mapErr(name, err)
	}
	real, ok := w.opened(f)
	if !ok {
		real = w.resolve(rel)
	}
	if real != rel {
		if err := w.deny.Check(name, real, false); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// opened returns the path of the open file f relative to the workspace
// root, as /proc/self/fd tells it; false when it cannot tell.
func (w *Workspace) opened(f *os.File) (string, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var p string
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		p, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil || rerr != nil || !filepath.IsAbs(p) {
		return "", false
	}
	rel, ok := w.under(p)
	if !ok {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// readAll reads f to its end and closes it.
func readAll(f *os.File) ([]byte, error) {
	defer f.Close()
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && int64(int(fi.Size())) == fi.Size() {
		size = int(fi.Size()) + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
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
	if w.deny.Empty() {
		b, err := w.root.ReadFile(rel)
		return b, mapErr(name, err)
	}
	f, err := w.openRead(name, rel)
	if err != nil {
		return nil, err
	}
	b, err := readAll(f)
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
	if err := w.check(name, rel, true); err != nil {
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
	if err := w.check(name, rel, true); err != nil {
		return err
	}
	return mapErr(name, w.root.MkdirAll(rel, perm))
}

// FS returns the workspace as a file system (for io/fs functions and glob
// libraries). Its paths are the relative slash paths of fs.ValidPath; it
// refuses links out like the methods do, and opening what the deny list
// denies reading.
func (w *Workspace) FS() fs.FS {
	if w.deny.Empty() {
		return w.root.FS()
	}
	return denyFS{w: w, fsys: w.root.FS()}
}

// denyFS is os.Root's file system with the deny list checked on opening.
type denyFS struct {
	w    *Workspace
	fsys fs.FS
}

func (d denyFS) open(op, name string) (*os.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return d.w.openRead(name, name)
}

func (d denyFS) Open(name string) (fs.File, error) {
	f, err := d.open("open", name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (d denyFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := d.open("readdir", name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

func (d denyFS) ReadFile(name string) ([]byte, error) {
	f, err := d.open("readfile", name)
	if err != nil {
		return nil, err
	}
	return readAll(f)
}

// Stat is not refused, as Workspace.Stat is not.
func (d denyFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.fsys, name) }

// Walk calls fn for the named file or directory and everything under it,
// in lexical order, as fs.WalkDir does: paths are relative to the workspace
// root, and links under name are reported, not followed. Name itself may be
// a link to a directory inside the workspace. Paths the deny list denies
// reading are left out, and their directories not entered; name itself
// being denied is an error. Walk stops with ctx's error once ctx is done.
func (w *Workspace) Walk(ctx context.Context, name string, fn fs.WalkDirFunc) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	if err := w.check(name, rel, false); err != nil {
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
	// Name may go through links; the deny list is checked on the paths
	// below it both as named and as they are.
	real := w.resolve(rel)
	err = fs.WalkDir(sub.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		sp := p
		p = path.Join(rel, sp)
		// Directories above p were checked on the way down.
		if w.deny.deniesRead(p) || (real != rel && w.deny.deniesRead(path.Join(real, sp))) {
			// Left out, and not entered: the walk does not follow links,
			// so p is the path itself.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return fn(p, d, mapErr(p, err))
	})
	return mapErr(name, err)
}
