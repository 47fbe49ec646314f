package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// The default deny list. Reading these would hand secrets to the model;
// writing the .git ones would run code outside the sandbox the next time
// the user runs git (a hook, or core.fsmonitor and core.hooksPath in the
// config).
var (
	defaultDenyRead = []string{
		".env*", "*.pem", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
		".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials",
	}
	defaultDenyWrite = []string{"**/.git/hooks", "**/.git/config"}
)

// DenyRules adjust the deny list: the workspace paths that the file tools
// refuse and that commands in bubblewrap cannot use, even in
// workspace-write mode.
//
// Patterns are doublestar globs ("*", "?", "[a-z]", "{a,b}", and "**" for
// any number of directories) matched against paths relative to the
// workspace root, as .gitignore does: a pattern without a slash matches a
// file or directory of that name at any depth (".env*", "*.pem"); one with
// a slash matches from the root ("config/secrets.yaml", "**/.git/hooks").
// A pattern that matches a directory denies everything under it.
type DenyRules struct {
	// Read are added to the paths neither read nor written, after the
	// defaults: .env*, *.pem, id_rsa*, id_dsa*, id_ecdsa*, id_ed25519*,
	// .ssh, .aws, .gnupg, .netrc and .git-credentials. Commands see a
	// file or directory there that they cannot open.
	Read []string
	// Write are added to the paths that may be read but not written,
	// after the defaults: **/.git/hooks and **/.git/config.
	Write []string
	// Allow are paths exempt from the rules, defaults included: a path is
	// denied only when it (or a directory above it) matches a rule and
	// that path does not match Allow. Listing a default pattern here
	// removes it; "**/.env.example" lets that file be read. Allow does not
	// open git's metadata to the file tools' writes, which no rule governs
	// (see GitRule).
	Allow []string
}

// DefaultDenyRules returns the rules of the default deny list.
func DefaultDenyRules() DenyRules {
	return DenyRules{Read: slices.Clone(defaultDenyRead), Write: slices.Clone(defaultDenyWrite)}
}

// DenyList is a compiled deny list. The zero value denies nothing.
type DenyList struct {
	read, write, allow []rule
}

// rule is one pattern of a deny list.
type rule struct {
	pattern string // as given
	glob    string // matched against the path, or its last element when base
	base    bool
	// A walk matches every path of the workspace against every rule, so
	// the common shapes are matched without doublestar: kind says how,
	// with lit the literal part. last, when not "", is the literal last
	// element a path must end with before glob is tried.
	kind matchKind
	lit  string
	last string
}

type matchKind int

const (
	matchGlob   matchKind = iota
	matchExact            // lit
	matchPrefix           // lit*
	matchSuffix           // *lit
)

const globMeta = "*?[{\\"

func newRule(pattern, glob string) rule {
	r := rule{pattern: pattern, glob: glob, base: !strings.Contains(glob, "/")}
	elem := glob
	if i := strings.LastIndexByte(glob, '/'); i >= 0 {
		elem = glob[i+1:]
	}
	switch {
	case !r.base:
		if !strings.ContainsAny(elem, globMeta) {
			r.last = elem
		}
	case !strings.ContainsAny(glob, globMeta):
		r.kind, r.lit = matchExact, glob
	case strings.HasSuffix(glob, "*") && !strings.ContainsAny(glob[:len(glob)-1], globMeta):
		r.kind, r.lit = matchPrefix, glob[:len(glob)-1]
	case strings.HasPrefix(glob, "*") && !strings.ContainsAny(glob[1:], globMeta):
		r.kind, r.lit = matchSuffix, glob[1:]
	}
	return r
}

func (r rule) match(p string) bool {
	name := p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		name = p[i+1:]
	}
	switch r.kind {
	case matchExact:
		return name == r.lit
	case matchPrefix:
		return strings.HasPrefix(name, r.lit)
	case matchSuffix:
		return strings.HasSuffix(name, r.lit)
	}
	if r.last != "" && name != r.last {
		return false
	}
	if r.base {
		p = name
	}
	ok, _ := doublestar.Match(r.glob, p)
	return ok
}

// NewDenyList compiles the default deny list with rules' changes.
func NewDenyList(rules DenyRules) (*DenyList, error) {
	d := &DenyList{}
	var err error
	if d.read, err = compile(append(slices.Clone(defaultDenyRead), rules.Read...)); err != nil {
		return nil, err
	}
	if d.write, err = compile(append(slices.Clone(defaultDenyWrite), rules.Write...)); err != nil {
		return nil, err
	}
	if d.allow, err = compile(rules.Allow); err != nil {
		return nil, err
	}
	// A rule that Allow names exactly is taken out, not only overruled: it
	// is then neither listed (Patterns, the tools' descriptions) nor walked.
	named := func(r rule) bool {
		return slices.ContainsFunc(d.allow, func(a rule) bool { return a.glob == r.glob })
	}
	d.read = slices.DeleteFunc(d.read, named)
	d.write = slices.DeleteFunc(d.write, named)
	return d, nil
}

// defaultDeny is the default deny list, compiled once.
var defaultDeny = func() *DenyList {
	d, err := NewDenyList(DenyRules{})
	if err != nil {
		panic("sandbox: the default deny list: " + err.Error())
	}
	return d
}()

// DefaultDenyList returns the default deny list.
func DefaultDenyList() *DenyList { return defaultDeny }

// ParsePattern returns the glob a deny-list pattern stands for: relative to
// the workspace root, without the slashes around it ("/build/" is "build"),
// or why it cannot be one. The config file checks its patterns with it, so
// what the file accepts is what the list enforces.
func ParsePattern(p string) (string, error) {
	glob := strings.Trim(strings.TrimSpace(p), "/")
	switch {
	case glob == "":
		return "", errors.New("an empty pattern")
	case slices.Contains(strings.Split(glob, "/"), ".."):
		return "", errors.New(`a pattern may not hold "..": the deny list covers the workspace only`)
	case !doublestar.ValidatePattern(glob):
		return "", errors.New(`not a valid glob (an unclosed "[" or "{", or a "\" at the end)`)
	}
	return glob, nil
}

func compile(patterns []string) ([]rule, error) {
	var rules []rule
	seen := map[string]bool{}
	for _, p := range patterns {
		glob, err := ParsePattern(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: deny list pattern %q: %v; want a glob relative to the workspace root, such as \".env*\" or \"config/*.key\"", p, err)
		}
		if seen[glob] {
			continue
		}
		seen[glob] = true
		rules = append(rules, newRule(p, glob))
	}
	return rules, nil
}

// Patterns returns the patterns the list denies: those neither read nor
// written, and those only not written. Allowed paths are left out.
func (d *DenyList) Patterns() (read, write []string) {
	for _, r := range d.read {
		read = append(read, r.pattern)
	}
	for _, r := range d.write {
		write = append(write, r.pattern)
	}
	return read, write
}

// Empty reports whether the list denies nothing.
func (d *DenyList) Empty() bool { return d == nil || len(d.read)+len(d.write) == 0 }

// first returns the first rule of rules p matches, unless p is allowed.
func (d *DenyList) first(rules []rule, p string) (rule, bool) {
	for _, r := range rules {
		if r.match(p) {
			for _, a := range d.allow {
				if a.match(p) {
					return rule{}, false
				}
			}
			return r, true
		}
	}
	return rule{}, false
}

// deniesRead reports whether p itself, not the directories above it, is
// denied reading.
func (d *DenyList) deniesRead(p string) bool {
	if d.Empty() {
		return false
	}
	_, ok := d.first(d.read, p)
	return ok
}

// Check returns a *DeniedError when the list denies reading (write false)
// or writing rel, a clean slash path relative to the workspace root: when
// rel or a directory above it matches a rule and is not allowed. name is
// the path as the caller gave it, for the error.
func (d *DenyList) Check(name, rel string, write bool) error {
	if d.Empty() || rel == "." || rel == "" {
		return nil
	}
	p := ""
	for elem := range strings.SplitSeq(rel, "/") {
		if p == "" {
			p = elem
		} else {
			p += "/" + elem
		}
		if r, ok := d.first(d.read, p); ok {
			return &DeniedError{Path: name, Match: p, Rule: r.pattern}
		}
		if write {
			if r, ok := d.first(d.write, p); ok {
				return &DeniedError{Path: name, Match: p, Rule: r.pattern, WriteOnly: true}
			}
		}
	}
	return nil
}

// ErrDenied is matched by errors.Is for every path refused because the
// deny list covers it.
var ErrDenied = errors.New("path is on the sandbox's deny list")

// DeniedError reports a path the deny list covers.
type DeniedError struct {
	// Path is the path as the caller gave it.
	Path string
	// Match is the path, relative to the workspace root, that the rule
	// matched: Path itself or a directory above it.
	Match string
	// Rule is the pattern that matched.
	Rule string
	// WriteOnly reports the rule denies writing only; reading is allowed.
	WriteOnly bool
	// SameFile reports Path is another name (a hard link) for the denied
	// file Match: a file is denied by identity, whatever its name. Match
	// is then relative to the workspace, or under the home directory
	// ("~/.ssh/id_ed25519"), and not shown in the message.
	SameFile bool
}

func (e *DeniedError) Error() string {
	if e.SameFile {
		// The denied file's own name is not shown: denied names are not
		// listed.
		if e.WriteOnly {
			return fmt.Sprintf("%q may not be written: it is another name (a hard link) for a file of git's metadata (rule %q), and what is written there runs outside the sandbox; it can still be read. Leave it unchanged, or ask the user to change it", e.Path, e.Rule)
		}
		return fmt.Sprintf("%q is another name (a hard link) for a file on the sandbox's deny list (rule %q): it may hold secrets, so it is neither read nor written under any name. Work without it, or ask the user for what you need from it", e.Path, e.Rule)
	}
	where := ""
	if e.Match != "" && e.Match != strings.TrimPrefix(path.Clean(filepath.ToSlash(e.Path)), "./") {
		where = fmt.Sprintf(", which matches %q", e.Match)
	}
	if e.WriteOnly {
		return fmt.Sprintf("%q may not be written: it is on the sandbox's deny list (rule %q%s), since what is written there runs outside the sandbox; it can still be read. Leave it unchanged, or ask the user to change it", e.Path, e.Rule, where)
	}
	return fmt.Sprintf("%q is on the sandbox's deny list (rule %q%s): it may hold secrets, so it is neither read nor written. Work without it, or ask the user for what you need from it", e.Path, e.Rule, where)
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// maxMasks bounds how many denied paths a command's sandbox masks: each is
// a mount.
const maxMasks = 4096

// mask is a workspace path a command's sandbox covers.
type mask struct {
	path string // absolute, on the host
	dir  bool
	// writeOnly: bound read-only over itself; otherwise covered by an
	// empty file or directory that cannot be opened.
	writeOnly bool
}

// masks walks the workspace at root and returns what the deny list covers
// there, parents before children; with readOnly the workspace is read-only
// anyway and write rules are skipped. Only paths that exist are found:
// something a command creates is not covered. A link the list covers is
// followed to what it names inside the workspace, which is covered
// instead; one leading out of the workspace is left (the sandbox shows
// nothing there but the read-only system). The walk stops with ctx's
// error once ctx is done.
func (d *DenyList) masks(ctx context.Context, root string, readOnly bool) ([]mask, error) {
	if d.Empty() {
		return nil, nil
	}
	var out []mask
	var links hardLinks
	seen := map[string]bool{}
	add := func(m mask) error {
		if seen[m.path] {
			return nil
		}
		if len(out) == maxMasks {
			return fmt.Errorf("more than %d paths in the workspace are on the sandbox's deny list; allow some (sandbox allow) or move them out of the workspace", maxMasks)
		}
		seen[m.path] = true
		out = append(out, m)
		return nil
	}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			// What rein cannot read, the sandbox cannot either.
			if e != nil && e.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		_, denyRead := d.first(d.read, rel)
		denyWrite := false
		if !denyRead && !readOnly {
			_, denyWrite = d.first(d.write, rel)
		}
		if e.Type().IsRegular() {
			links.file(p, rel, e, denyRead)
		} else if denyRead && e.IsDir() {
			links.deniedDir(ctx, p)
		}
		if !denyRead && !denyWrite {
			return nil
		}
		target, dir := p, e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			resolved, err := filepath.EvalSymlinks(p)
			if err != nil || (resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator))) {
				return nil
			}
			fi, err := os.Stat(resolved)
			if err != nil {
				return nil
			}
			target, dir = resolved, fi.IsDir()
		}
		if err := add(mask{path: target, dir: dir, writeOnly: denyWrite}); err != nil {
			return err
		}
		if denyRead && e.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err == nil {
		err = links.masks(d, root, readOnly, add)
	}
	// Mount order: a directory before what is inside it.
	slices.SortStableFunc(out, func(a, b mask) int { return strings.Compare(a.path, b.path) })
	return out, err
}

// hardLinks finds, during the walk of masks, the other names (hard links)
// of denied files, which a command could otherwise read (DESIGN §7.4: a
// file is denied by identity). Only files with more than one link are
// looked at; each costs an lstat.
type hardLinks struct {
	denied map[fileID]bool // denied files, read
	git    map[fileID]bool // files of git's metadata
	linked []linkedPath    // the other files with several links
}

type linkedPath struct {
	path string
	id   fileID
}

func (h *hardLinks) file(p, rel string, e fs.DirEntry, denied bool) {
	id, ok := linkedID(e)
	if !ok {
		return
	}
	switch {
	case denied:
		h.mark(&h.denied, id)
	case isGitPath(rel):
		h.mark(&h.git, id)
	default:
		h.linked = append(h.linked, linkedPath{path: p, id: id})
	}
}

// deniedDir marks the files under the denied directory p, which the walk
// does not enter.
func (h *hardLinks) deniedDir(ctx context.Context, p string) {
	_ = filepath.WalkDir(p, func(q string, e fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return ctx.Err()
		}
		if !e.Type().IsRegular() {
			return nil
		}
		if id, ok := linkedID(e); ok {
			h.mark(&h.denied, id)
		}
		return nil
	})
}

func (h *hardLinks) mark(m *map[fileID]bool, id fileID) {
	if *m == nil {
		*m = map[fileID]bool{}
	}
	(*m)[id] = true
}

// masks adds a mask for each other name of a denied file, also of one in
// the secret places of the home directory, and, unless readOnly, a
// read-only bind for each other name of a file of git's metadata.
func (h *hardLinks) masks(d *DenyList, root string, readOnly bool, add func(mask) error) error {
	if len(h.linked) == 0 {
		return nil
	}
	for id := range homeSecrets(d, root) {
		h.mark(&h.denied, id)
	}
	for _, l := range h.linked {
		var err error
		switch {
		case h.denied[l.id]:
			err = add(mask{path: l.path})
		case h.git[l.id] && !readOnly:
			err = add(mask{path: l.path, writeOnly: true})
		}
		if err != nil {
			return err
		}
	}
	return nil
}
