package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A denied file is denied by identity, not only by name (DESIGN §7.4): a
// hard link "notes.txt" to ".env" is the same file, and reading it would
// hand over the secret. A file has another name only when its link count
// is above one, so only such files are looked up, and only such files are
// kept: the set holds the identities of denied files with more than one
// link. Finding them takes a walk of the workspace (the names are the
// deny list's), done when a file with several links is first opened and
// again once the set is older than identityTTL.
//
// The set also holds the files of the well-known secret places of the
// user's home directory that the deny list names (~/.ssh, ~/.aws,
// ~/.gnupg, ~/.netrc, ~/.git-credentials, …) when the home directory is on
// the workspace's device, since a hard link can only be made there; and,
// as denied for writing only, the files with several links under a .git
// directory (objects excepted), since writing such a link writes git's
// metadata.

// identityTTL is how long a computed set of denied identities is used
// before the next file with several links walks the workspace again. Links
// made in the meantime by a sandboxed command cannot name a denied file,
// which bubblewrap masks; the time bounds what else can be missed.
const identityTTL = 10 * time.Second

// maxHomeSecretFiles bounds the files looked at under each secret place of
// the home directory (~/.gnupg can be large); past it the rest is not
// looked at.
const maxHomeSecretFiles = 10000

// deniedFile is a denied file with more than one link, by identity.
type deniedFile struct {
	name      string // its denied path: relative to the workspace, or ~/…
	rule      string
	writeOnly bool // a file of git's metadata: reading is allowed
}

// identities is a workspace's set of denied identities. The zero value is
// empty and computed on first use.
type identities struct {
	mu  sync.Mutex
	at  time.Time
	set map[fileID]deniedFile
	err error
}

// checkIdentity refuses id, a file named name with more than one link,
// when it is a denied file under another name: for reading (write false)
// when the deny list denies reading it, for writing also when it is git's.
// It fails closed: a set that cannot be computed refuses the file.
func (w *Workspace) checkIdentity(name string, id fileID, write bool) error {
	w.ids.mu.Lock()
	if w.ids.set == nil || time.Since(w.ids.at) > identityTTL {
		w.ids.set, w.ids.err = w.scanIdentities()
		w.ids.at = time.Now()
	}
	df, ok := w.ids.set[id]
	err := w.ids.err
	w.ids.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%q has several names (hard links), and whether one is on the sandbox's deny list cannot be told: %w", name, err)
	}
	if !ok || (df.writeOnly && !write) {
		return nil
	}
	return &DeniedError{Path: name, Match: df.name, Rule: df.rule, WriteOnly: df.writeOnly, SameFile: true}
}

// scanIdentities walks the workspace, and the secret places of the home
// directory, for denied files with more than one link.
func (w *Workspace) scanIdentities() (map[fileID]deniedFile, error) {
	set := map[fileID]deniedFile{}
	fsys := w.root.FS()
	// add records the files under p (p included) with more than one
	// link; under a .git directory its objects are left out.
	add := func(fsys fs.FS, p string, df func(string) deniedFile, limit int, git bool) {
		n := 0
		_ = fs.WalkDir(fsys, p, func(q string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if n++; limit > 0 && n > limit {
				return fs.SkipAll
			}
			if git && e.IsDir() && e.Name() == "objects" {
				return fs.SkipDir
			}
			if !e.Type().IsRegular() {
				return nil
			}
			if id, ok := linkedID(e); ok {
				set[id] = df(q)
			}
			return nil
		})
	}
	err := fs.WalkDir(fsys, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			// What cannot be read cannot be read through a link either.
			if e != nil && e.IsDir() && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if r, ok := w.deny.first(w.deny.read, p); ok {
			add(fsys, p, func(q string) deniedFile { return deniedFile{name: q, rule: r.pattern} }, 0, false)
			return skipIfDir(e)
		}
		if e.IsDir() && isGitName(e.Name()) {
			add(fsys, p, func(q string) deniedFile {
				// A denied name inside .git is denied as that.
				if r, ok := w.deny.first(w.deny.read, q); ok {
					return deniedFile{name: q, rule: r.pattern}
				}
				return deniedFile{name: q, rule: GitRule, writeOnly: true}
			}, 0, true)
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	w.scanHome(set)
	return set, nil
}

// scanHome adds the secret places of the home directory.
func (w *Workspace) scanHome(set map[fileID]deniedFile) {
	for id, df := range homeSecrets(w.deny, w.dirs[0]) {
		set[id] = df
	}
}

// homeSecrets returns the files with more than one link of the home
// directory's entries that d denies reading (~/.ssh, ~/.aws, ~/.netrc, …),
// when the home directory is on the device of dir: a hard link to them
// can only be made there.
func homeSecrets(d *DenyList, dir string) map[fileID]deniedFile {
	home, err := os.UserHomeDir()
	if err != nil || d.Empty() {
		return nil
	}
	var hs, ds unix.Stat_t
	if unix.Stat(home, &hs) != nil || unix.Stat(dir, &ds) != nil || hs.Dev != ds.Dev {
		return nil
	}
	entries, err := os.ReadDir(home)
	if err != nil {
		return nil
	}
	set := map[fileID]deniedFile{}
	for _, e := range entries {
		r, ok := d.first(d.read, e.Name())
		if !ok {
			continue
		}
		n := 0
		_ = filepath.WalkDir(filepath.Join(home, e.Name()), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if n++; n > maxHomeSecretFiles {
				return fs.SkipAll
			}
			if !de.Type().IsRegular() {
				return nil
			}
			if id, ok := linkedID(de); ok {
				rel, _ := filepath.Rel(home, p)
				set[id] = deniedFile{name: path.Join("~", filepath.ToSlash(rel)), rule: r.pattern}
			}
			return nil
		})
	}
	return set
}

// linkedID returns the identity of the file e when it has more than one
// link.
func linkedID(e fs.DirEntry) (fileID, bool) {
	fi, err := e.Info()
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}

func skipIfDir(e fs.DirEntry) error {
	if e.IsDir() {
		return fs.SkipDir
	}
	return nil
}
