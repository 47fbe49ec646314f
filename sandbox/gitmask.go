package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// A repository's .git directory is code the user runs: the next git
// command on the host runs its hooks, core.fsmonitor, core.hooksPath,
// aliases and filters, follows commondir and alternates elsewhere. A
// command in the sandbox that could write there would run code outside it.
// The deny list masks .git/hooks and .git/config, but only where they
// already exist, and a command may create what does not: .git/hooks in a
// repository without one, .git/commondir, .git/info, or a whole .git in a
// workspace that has none. So every .git of the workspace is bound
// read-only as a whole, the directory itself, and nothing under it can be
// created (DESIGN §7.3).

// gitSetup is what keeps a command from changing the workspace's
// repositories.
type gitSetup struct {
	// ro are host paths bound read-only over themselves: each .git
	// directory or gitdir file of the workspace, at any depth, and the
	// directories a gitdir file (or its commondir) names inside the
	// workspace.
	ro []string
	// placeholder is the workspace's .git when there is none: an empty
	// read-only tmpfs is mounted there, so that the command cannot make
	// the workspace a repository whose config the user's next git reads.
	// bwrap creates the mount point on the host; release removes it.
	placeholder string
}

// maxGitBinds bounds how many repositories a command's sandbox binds
// read-only: each is a mount.
const maxGitBinds = 1024

// maxGitFile bounds what is read of a gitdir file or a commondir file;
// git writes one line.
const maxGitFile = 4096

// findGit walks the workspace ws and returns what keeps its repositories
// read-only. Directories the deny list keeps from being read are not
// entered: they are masked as a whole. A .git that is a symbolic link is
// refused, since a link cannot be made a mount point: the command could
// replace it with a directory of its own. The walk stops with ctx's error
// once ctx is done.
func findGit(ctx context.Context, ws string, deny *DenyList) (gitSetup, error) {
	var g gitSetup
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return g, fmt.Errorf("resolving the workspace: %w", err)
	}
	seen := map[string]bool{}
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		if len(g.ro) == maxGitBinds {
			return fmt.Errorf("the workspace holds more than %d git repositories; the sandbox binds each read-only, so move some out of the workspace", maxGitBinds)
		}
		seen[p] = true
		g.ro = append(g.ro, p)
		return nil
	}
	// inside maps a host path to the same path under ws, if it lies in
	// the workspace once links are resolved; ok is false otherwise (what
	// lies outside is not in the sandbox, or only read-only).
	inside := func(p string) (string, bool, error) {
		r, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) {
			// A gitdir that does not exist could be created by the
			// command, and the .git file would lead git there.
			rel, ok := under(real, filepath.Clean(p))
			if !ok {
				if rel, ok = under(ws, filepath.Clean(p)); !ok {
					return "", false, nil
				}
			}
			return "", false, fmt.Errorf("it names %s, which does not exist, and the sandbox cannot keep a command from creating it there: fix or remove the gitdir file", filepath.ToSlash(rel))
		}
		if err != nil {
			return "", false, nil
		}
		rel, ok := under(real, r)
		if !ok {
			return "", false, nil
		}
		return filepath.Join(ws, rel), true, nil
	}
	// The walk is of the resolved workspace, which WalkDir enters even when
	// ws is a link to it; the paths bound are under ws, where the sandbox
	// shows the workspace.
	err = filepath.WalkDir(real, func(hp string, e fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			// What rein cannot read, the sandbox cannot either.
			if e != nil && e.IsDir() && hp != real {
				return fs.SkipDir
			}
			return nil
		}
		if hp == real {
			return nil
		}
		p := filepath.Join(ws, hp[len(real)+1:])
		rel := filepath.ToSlash(hp[len(real)+1:])
		if deny.deniesRead(rel) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.Name() != ".git" {
			return nil
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link, which the sandbox cannot keep read-only (a command could put a repository of its own there): replace the link with what it names", rel)
		case e.IsDir():
			if err := add(p); err != nil {
				return err
			}
			return fs.SkipDir
		}
		// A gitdir file ("gitdir: PATH"), as worktrees and submodules
		// have: the file is bound, so it cannot be pointed elsewhere, and
		// so is the directory it names when that is in the workspace, and
		// that directory's commondir.
		if err := add(p); err != nil {
			return err
		}
		dir, ok := readGitLink(p, "gitdir: ")
		if !ok {
			return nil
		}
		dir, ok, err = inside(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if !ok {
			return nil
		}
		if err := add(dir); err != nil {
			return err
		}
		common, ok := readGitLink(filepath.Join(dir, "commondir"), "")
		if !ok {
			return nil
		}
		if common, ok, err = inside(common); err != nil {
			return fmt.Errorf("%s: the commondir of its gitdir: %w", rel, err)
		} else if ok {
			return add(common)
		}
		return nil
	})
	if err != nil {
		return gitSetup{}, err
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); errors.Is(err, fs.ErrNotExist) {
		g.placeholder = filepath.Join(ws, ".git")
	}
	return g, nil
}

// under returns p relative to dir when p is dir or lies under it.
func under(dir, p string) (string, bool) {
	if p == dir {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(p, dir+string(filepath.Separator)); ok {
		return rest, true
	}
	return "", false
}

// readGitLink reads the path a gitdir file (after prefix) or a commondir
// file holds, made absolute against the file's directory. Only a regular
// file is read, opened without waiting: a command may have left a FIFO
// there, which would hold every later command's walk.
func readGitLink(file, prefix string) (string, bool) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitFile))
	if err != nil {
		return "", false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	s, ok := strings.CutPrefix(strings.TrimSpace(string(line)), prefix)
	if !ok || s == "" {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(file), s)
	}
	return filepath.Clean(s), true
}

// gitArgs returns the bwrap arguments of g. They come after the deny
// list's masks, which bind the directories above .git/hooks read-write
// over themselves: bound after them, .git is read-only whatever they did,
// and the masks under it stay, being mounts inside it.
func gitArgs(g gitSetup) []string {
	var args []string
	for _, p := range g.ro {
		args = append(args, "--ro-bind", p, p)
	}
	if g.placeholder != "" {
		args = append(args, "--tmpfs", g.placeholder, "--remount-ro", g.placeholder)
	}
	return args
}

// placeholders counts the commands of this process running with a
// placeholder .git at each path. The mount point bwrap leaves on the host
// is removed when the last of them ends, not before: removing a directory
// that is a mount point in another command's namespace would take that
// command's mount away, and let it create .git after all.
var placeholders = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// acquirePlaceholder decides under the lock whether g needs a
// placeholder .git: findGit saw none, or another command of this process
// has its placeholder there (an empty directory that findGit took for a
// repository). It returns the release to call once the command has ended.
func acquirePlaceholder(g *gitSetup, ws string) (release func()) {
	p := filepath.Join(ws, ".git")
	placeholders.Lock()
	defer placeholders.Unlock()
	if placeholders.n[p] > 0 {
		g.ro = slices.DeleteFunc(g.ro, func(e string) bool { return e == p })
		g.placeholder = p
	}
	if g.placeholder == "" {
		return func() {}
	}
	placeholders.n[p]++
	return func() {
		placeholders.Lock()
		defer placeholders.Unlock()
		if placeholders.n[p]--; placeholders.n[p] > 0 {
			return
		}
		delete(placeholders.n, p)
		// Only an empty directory is removed: one the user filled in
		// the meantime (git init) stays.
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			_ = os.Remove(p)
		}
	}
}
