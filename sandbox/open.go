package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// How the workspace opens a file so that what it decides on is what it
// opened (DESIGN §7.4): no check of a path and then a use that follows
// whatever the path names by then.
//
// The directory holding the file is opened through os.Root, which follows
// links inside the workspace and refuses those that lead out; its real
// path is then read from the descriptor, so a link swapped on the way does
// not matter: the rules are applied to where the directory really is. The
// last element is opened relative to that descriptor with O_NOFOLLOW; a
// link there is read and its target opened the same way, and the file
// opened is then checked by its descriptor (type, identity).

// fileID is a file's identity: device and inode. A hard link has the
// identity of the file it is another name for.
type fileID struct{ dev, ino uint64 }

// withFd runs fn with f's descriptor.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// fstat returns what f's descriptor refers to.
func fstat(f *os.File) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := withFd(f, func(fd int) error { return ignoringEINTR(func() error { return unix.Fstat(fd, &st) }) })
	return st, err
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// realRel returns the path of the open file f relative to the workspace
// root, as the kernel names it (/proc/self/fd). Where /proc cannot tell,
// rel's links are resolved and the result is accepted only when it is the
// very file f is (same identity), so a swap in between is refused rather
// than believed.
func (w *Workspace) realRel(name string, f *os.File, rel string) (string, error) {
	if real, ok := w.opened(f); ok {
		return real, nil
	}
	real := w.resolve(rel)
	st, err := fstat(f)
	if err != nil {
		return "", &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	if fi, err := w.root.Lstat(real); err == nil {
		if s, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(s.Dev) == uint64(st.Dev) && s.Ino == st.Ino {
			return real, nil
		}
	}
	return "", fmt.Errorf("%q changed while it was being opened (a link was swapped); try again", name)
}

// opened returns the path of the open file f relative to the workspace
// root, as /proc/self/fd tells it; false when it cannot tell.
func (w *Workspace) opened(f *os.File) (string, bool) {
	var p string
	var rerr error
	if err := withFd(f, func(fd int) error {
		p, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		return nil
	}); err != nil || rerr != nil || !filepath.IsAbs(p) {
		return "", false
	}
	rel, ok := w.under(p)
	if !ok {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// openDir opens rel, which should be a directory, through os.Root, and
// returns it with its real path relative to the root.
func (w *Workspace) openDir(name, rel string) (*os.File, string, error) {
	d, err := w.root.Open(rel)
	if err != nil {
		return nil, "", mapErr(name, err)
	}
	real, err := w.realRel(name, d, rel)
	if err != nil {
		d.Close()
		return nil, "", err
	}
	return d, real, nil
}

// openNoFollow opens rel with flags (O_RDONLY, or O_WRONLY|O_CREAT) and
// perm, and returns it with its real path relative to the root. The last
// element is opened without following a link; a link there is read and
// its target opened the same way, at most maxLinks times. before, when
// not nil, is called with the directory's descriptor and the real path
// about to be opened, before anything is created, and refuses it by
// returning an error. A FIFO or device is opened without blocking, for the
// caller to refuse by its type.
func (w *Workspace) openNoFollow(name, rel string, flags int, perm fs.FileMode, before func(d *os.File, real string) error) (*os.File, string, error) {
	for hops := 0; ; hops++ {
		if rel == "." {
			d, real, err := w.openDir(name, ".")
			if err == nil && before != nil {
				if err = before(d, real); err != nil {
					d.Close()
				}
			}
			if err != nil {
				return nil, "", err
			}
			return d, real, nil
		}
		dir, base := path.Dir(rel), path.Base(rel)
		d, realDir, err := w.openDir(name, dir)
		if err != nil {
			return nil, "", err
		}
		real := path.Join(realDir, base)
		if before != nil {
			if err := before(d, real); err != nil {
				d.Close()
				return nil, "", err
			}
		}
		var nfd int
		err = withFd(d, func(dfd int) error {
			return ignoringEINTR(func() error {
				var err error
				nfd, err = unix.Openat(dfd, base, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
				return err
			})
		})
		if errors.Is(err, unix.ELOOP) {
			target, lerr := readlinkAt(d, base)
			d.Close()
			if lerr != nil {
				return nil, "", &fs.PathError{Op: "open", Path: name, Err: err}
			}
			if hops >= maxLinks {
				return nil, "", &fs.PathError{Op: "open", Path: name, Err: unix.ELOOP}
			}
			if rel, err = w.linkTarget(name, realDir, target); err != nil {
				return nil, "", err
			}
			continue
		}
		d.Close()
		if err != nil {
			return nil, "", &fs.PathError{Op: "open", Path: name, Err: err}
		}
		// Named by its host path, as os.Root names what it opens, so that
		// ReadDir's entries can stat themselves.
		return os.NewFile(uintptr(nfd), filepath.Join(w.dirs[0], filepath.FromSlash(real))), real, nil
	}
}

// readlinkAt returns the target of the link base in the directory d.
func readlinkAt(d *os.File, base string) (string, error) {
	var target string
	err := withFd(d, func(dfd int) error {
		for size := 256; ; size *= 2 {
			buf := make([]byte, size)
			n, err := unix.Readlinkat(dfd, base, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if n < size {
				target = string(buf[:n])
				return nil
			}
		}
	})
	return target, err
}

// linkTarget returns the path, relative to the root, that a link in the
// directory dir (a real path) with target names, or an *EscapeError when
// it leads out of the workspace.
func (w *Workspace) linkTarget(name, dir, target string) (string, error) {
	var t string
	if filepath.IsAbs(target) {
		r, ok := w.under(filepath.Clean(target))
		if !ok {
			return "", &EscapeError{Path: name, Reason: ReasonSymlink}
		}
		t = filepath.ToSlash(r)
	} else {
		t = path.Join(dir, filepath.ToSlash(target))
	}
	if t != "." && !filepath.IsLocal(filepath.FromSlash(t)) {
		return "", &EscapeError{Path: name, Reason: ReasonSymlink}
	}
	return t, nil
}

// errNotRegular refuses what is neither a regular file nor a directory:
// reading a FIFO would block the tool, and a device is not the
// workspace's.
var errNotRegular = errors.New("not a regular file or a directory (a pipe, socket or device); only files and directories can be opened")

// vet decides on f, opened at real (relative to the root) for name: the
// deny list on its real path, its type, and, for a file with more than
// one name, its identity. write says f is to be written.
func (w *Workspace) vet(name, rel, real string, f *os.File, write bool) error {
	if real != rel {
		if err := w.deny.Check(name, real, write); err != nil {
			return err
		}
	}
	st, err := fstat(f)
	if err != nil {
		return &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		if write {
			return &fs.PathError{Op: "open", Path: name, Err: unix.EISDIR}
		}
		return nil
	default:
		return &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	if st.Nlink > 1 {
		return w.checkIdentity(name, fileID{dev: uint64(st.Dev), ino: st.Ino}, write)
	}
	return nil
}
