package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
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
// *DeniedError, also when a link leads there or the file is another name
// (a hard link) for a denied one; walks and listings leave denied names
// out. Stat, Lstat and Readlink are not refused: a denied path may be
// seen when named, not opened. Whatever the deny list says, git's
// metadata is never written (gitguard.go).
//
// Every method decides on the file it opened (open.go), not on a path
// checked before, so a link swapped between a check and a use gains
// nothing.
type Workspace struct {
	root *os.Root
	// dirs are the absolute forms of the root accepted in absolute paths:
	// as given and with links resolved.
	dirs []string
	deny *DenyList
	ids  identities
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
// *DeniedError when the deny list covers it, the path its links lead to
// or the file it is (another name for a denied file), or, for writing,
// when it is in git's metadata by its name. Programs that read the
// workspace without its methods (ripgrep) use it to leave denied files
// out; the methods themselves decide again on the file they open.
func (w *Workspace) Check(name string, write bool) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	return w.check(name, rel, write)
}

func (w *Workspace) check(name, rel string, write bool) error {
	real := w.resolve(rel)
	if err := w.checkNames(name, rel, real, write); err != nil {
		return err
	}
	if write {
		if err := checkGitName(name, rel); err != nil {
			return err
		}
		if err := checkGitName(name, real); err != nil {
			return err
		}
	}
	// Another name for a denied file: only a file with several links can
	// be one.
	if fi, err := w.root.Stat(real); err == nil && fi.Mode().IsRegular() {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return w.checkIdentity(name, fileID{dev: uint64(st.Dev), ino: st.Ino}, write)
		}
	}
	return nil
}

// checkNames applies the deny list to rel and to real, rel with its links
// resolved.
func (w *Workspace) checkNames(name, rel, real string, write bool) error {
	if w.deny.Empty() {
		return nil
	}
	if err := w.deny.Check(name, rel, write); err != nil {
		return err
	}
	if real != rel {
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
	f, _, err := w.openRead(name, rel)
	return f, err
}

// openRead opens rel for reading and returns it with its real path
// relative to the root. The deny list is checked against rel, then
// against the file opened: its real path as the kernel names it, its type
// and its identity, so neither a link (whatever it was a moment before)
// nor a hard link leads to a denied file.
func (w *Workspace) openRead(name, rel string) (*os.File, string, error) {
	if err := w.deny.Check(name, rel, false); err != nil {
		return nil, "", err
	}
	f, real, err := w.openNoFollow(name, rel, unix.O_RDONLY, 0, nil)
	if err != nil {
		return nil, "", mapErr(name, err)
	}
	if err := w.vet(name, rel, real, f, false); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, real, nil
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

// ReadDir returns the entries of the named directory sorted by name,
// without those the deny list denies reading: denied names are not listed,
// nor links leading to a denied path.
func (w *Workspace) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	return w.readDir(name, rel)
}

func (w *Workspace) readDir(name, rel string) ([]fs.DirEntry, error) {
	f, real, err := w.openRead(name, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return w.unlisted(rel, real, e) })
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// unlisted reports whether the entry e of the directory rel, at real,
// is left out of listings: its name is denied, or it is a link to a
// denied path.
func (w *Workspace) unlisted(rel, real string, e fs.DirEntry) bool {
	if w.deny.Empty() {
		return false
	}
	p := path.Join(rel, e.Name())
	if w.deny.deniesRead(p) || (real != rel && w.deny.deniesRead(path.Join(real, e.Name()))) {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		return w.checkNames(p, p, w.resolve(p), false) != nil
	}
	return false
}

// ReadFile returns the named file's contents.
func (w *Workspace) ReadFile(name string) ([]byte, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	f, _, err := w.openRead(name, rel)
	if err != nil {
		return nil, err
	}
	b, err := readAll(f)
	return b, mapErr(name, err)
}

// WriteFile writes data to the named file, creating it with perm (before
// umask) and its missing parent directories, or truncating it. A link
// inside the workspace is written through; what is written is decided on
// where the file really is, once its directory is open, and on the file
// opened (its type and identity) before anything in it changes.
func (w *Workspace) WriteFile(name string, data []byte, perm fs.FileMode) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	if err := w.check(name, rel, true); err != nil {
		return err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.mkdirAll(name, dir, 0o755); err != nil {
			return err
		}
	}
	f, real, err := w.openNoFollow(name, rel, unix.O_WRONLY|unix.O_CREAT, perm, func(d *os.File, real string) error {
		return w.writable(name, d, real)
	})
	if err != nil {
		return mapErr(name, err)
	}
	if err := w.vet(name, rel, real, f, true); err != nil {
		f.Close()
		return err
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writable refuses creating or writing real, a path relative to the root
// whose directory d is open: the deny list, a .git element, a repository
// it is in or would make.
func (w *Workspace) writable(name string, d *os.File, real string) error {
	if err := w.deny.Check(name, real, true); err != nil {
		return err
	}
	if err := checkGitName(name, real); err != nil {
		return err
	}
	return checkGitDir(name, d, path.Dir(real), path.Base(real))
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
	if rel == "." {
		return nil
	}
	return w.mkdirAll(name, rel, perm)
}

// mkdirAll creates the directory rel and its missing parents, one at a
// time: each in its parent opened and checked where it really is.
func (w *Workspace) mkdirAll(name, rel string, perm fs.FileMode) error {
	cur := "."
	for elem := range strings.SplitSeq(rel, "/") {
		next := path.Join(cur, elem)
		for try := 0; ; try++ {
			d, real, err := w.openDir(name, next)
			if err == nil {
				fi, serr := d.Stat()
				d.Close()
				if serr == nil && !fi.IsDir() {
					return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR}
				}
				cur = real
				break
			}
			if !errors.Is(err, fs.ErrNotExist) || try == 2 {
				return err
			}
			pd, preal, err := w.openDir(name, cur)
			if err != nil {
				return err
			}
			err = w.writable(name, pd, path.Join(preal, elem))
			if err == nil {
				err = withFd(pd, func(fd int) error {
					return ignoringEINTR(func() error { return unix.Mkdirat(fd, elem, uint32(perm.Perm())) })
				})
				if errors.Is(err, unix.EEXIST) {
					err = nil // made meanwhile: open it again
				} else if err != nil {
					err = &fs.PathError{Op: "mkdir", Path: name, Err: err}
				}
			}
			pd.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// FS returns the workspace as a file system (for io/fs functions and glob
// libraries). Its paths are the relative slash paths of fs.ValidPath; it
// refuses links out like the methods do, and opening what the deny list
// denies reading; its listings and Stat leave denied names out.
func (w *Workspace) FS() fs.FS {
	return denyFS{w: w, fsys: w.root.FS()}
}

// denyFS is os.Root's file system with the deny list checked on opening
// and listing.
type denyFS struct {
	w    *Workspace
	fsys fs.FS
}

func (d denyFS) open(op, name string) (*os.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	f, _, err := d.w.openRead(name, name)
	return f, err
}

func (d denyFS) Open(name string) (fs.File, error) {
	f, err := d.open("open", name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (d denyFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return d.w.readDir(name, name)
}

func (d denyFS) ReadFile(name string) ([]byte, error) {
	f, err := d.open("readfile", name)
	if err != nil {
		return nil, err
	}
	return readAll(f)
}

// Stat refuses a path whose name, or whose links, the deny list denies
// reading, so that a glob naming it finds nothing: the names of denied
// files are not listed, even when asked for by name.
func (d denyFS) Stat(name string) (fs.FileInfo, error) {
	if fs.ValidPath(name) && name != "." {
		if err := d.w.checkNames(name, name, d.w.resolve(name), false); err != nil {
			return nil, err
		}
	}
	return fs.Stat(d.fsys, name)
}

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
