package sandbox

import (
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Git runs what its repository's metadata says: hooks, core.fsmonitor and
// core.hooksPath in config, a commondir or alternates pointing at a
// directory with such a config. Whoever writes there runs code on the host
// the next time the user runs git, outside any sandbox. So the file tools
// never write a git directory (DESIGN §7.3):
//
//   - any path with an element named .git (in any case, as case-insensitive
//     file systems see it), whether it exists or not — the workspace's
//     .git, a nested repository's, a .git file (a gitdir link) and one to be
//     created;
//   - any path inside a directory that git takes for a repository (HEAD
//     with objects and refs, or with commondir): where a .git file's gitdir
//     points, a bare repository, a worktree's metadata — and the write that
//     would make a directory one.
//
// This holds in every sandbox mode and whatever the deny list allows. In
// full-access mode the model may run git itself through exec, which is
// then the user's choice; the file tools still have no business in .git,
// and without --exec they are the only writers a prompt-injected model
// has, so a user who picked full-access for commands would not expect an
// edit_file call to plant a hook.

// Rules reported in a *DeniedError for writes into git's metadata.
const (
	// GitRule is the rule of a path with an element named .git.
	GitRule = "**/.git"
	// GitDirRule is the rule of a path in a directory git takes for a
	// repository (HEAD with objects and refs, or with commondir).
	GitDirRule = "git directory (HEAD with objects and refs)"
)

// isGitName reports whether elem names a .git directory or file.
func isGitName(elem string) bool { return strings.EqualFold(elem, ".git") }

// gitElement returns the part of rel up to its first element named .git,
// or false.
func gitElement(rel string) (string, bool) {
	p := ""
	for elem := range strings.SplitSeq(rel, "/") {
		p = path.Join(p, elem)
		if isGitName(elem) {
			return p, true
		}
	}
	return "", false
}

// isGitPath reports whether an element of rel is named .git.
func isGitPath(rel string) bool {
	_, ok := gitElement(rel)
	return ok
}

// checkGitName refuses writing rel when an element of it is named .git.
func checkGitName(name, rel string) error {
	if m, ok := gitElement(rel); ok {
		return &DeniedError{Path: name, Match: m, Rule: GitRule, WriteOnly: true}
	}
	return nil
}

// gitMarkers are the entries that make a directory a repository to git.
var gitMarkers = [...]string{"HEAD", "objects", "refs", "commondir"}

// checkGitDir refuses creating or writing base in the directory d, whose
// real path relative to the root is dir, when d or a directory above it
// (up to the root) is a repository, or when base would make d one. The
// directories above are reached through ".." from d's descriptor, so what
// is looked at is where d really is.
func checkGitDir(name string, d *os.File, dir, base string) error {
	depth := 0
	if dir != "." {
		depth = strings.Count(dir, "/") + 1
	}
	cur := -1
	if err := withFd(d, func(fd int) error {
		var err error
		cur, err = unix.Dup(fd)
		return err
	}); err != nil {
		return &fs.PathError{Op: "dup", Path: name, Err: err}
	}
	defer func() { unix.Close(cur) }()
	at := dir
	for level := 0; level <= depth; level++ {
		var has [len(gitMarkers)]bool
		for i, m := range gitMarkers {
			var st unix.Stat_t
			has[i] = (level == 0 && base == m) || ignoringEINTR(func() error {
				return unix.Fstatat(cur, m, &st, unix.AT_SYMLINK_NOFOLLOW)
			}) == nil
		}
		if has[0] && (has[3] || (has[1] && has[2])) {
			return &DeniedError{Path: name, Match: at, Rule: GitDirRule, WriteOnly: true}
		}
		if level == depth {
			break
		}
		up, err := unix.Openat(cur, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: name, Err: err}
		}
		unix.Close(cur)
		cur = up
		at = path.Dir(at)
	}
	return nil
}
