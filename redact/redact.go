// Package redact removes secrets from text before it reaches a model, a log
// or an event (DESIGN §3, §7.4): API keys and tokens recognised by their
// shape, Authorization header values, passwords in URLs, private key
// blocks, the values of configured secrets, and the home directory, which
// becomes ~ except inside the workspace.
//
// A Redactor cleans a text in one pass: every literal that can start
// something to remove (a configured secret, a token's prefix, the home
// directory) is indexed by its first byte, so each byte of the text costs
// one table lookup, and text without secrets is returned as it is, without
// allocating.
package redact

import (
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Mask replaces what was removed.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest configured secret value that is redacted;
// shorter values ("1", "dev") would blank ordinary words out of the text.
const MinSecretLen = 8

// Options configures a Redactor.
type Options struct {
	// Secrets are values to remove wherever they appear; values shorter
	// than MinSecretLen are ignored.
	Secrets []string
	// Home is the home directory, replaced by ~; empty leaves paths alone.
	Home string
	// Workspace is the directory the agent works in. Paths under it are
	// left as they are even when it lies inside Home, since the model
	// addresses workspace files by those paths.
	Workspace string
}

// Redactor cleans text. It is safe for concurrent use; a nil *Redactor
// returns text unchanged.
type Redactor struct {
	home      string
	workspace string
	// first indexes every literal that starts something to clean by its
	// first byte: configured secrets longest first, then the rules'
	// triggers in rule order, then the home directory.
	first [256][]hint
	// pairs has the bit of every literal's first two bytes: most positions
	// of a text are ruled out by one bit test.
	pairs [1 << 16 / 64]uint64
}

// hint is a literal whose presence at a position starts a match.
type hint struct {
	lit  string
	kind kind
	// rule is the index in rules of a trigger's rule.
	rule int
}

type kind uint8

const (
	kindSecret kind = iota
	kindRule
	kindHome
)

// New returns a redactor for opts.
func New(opts Options) *Redactor {
	r := &Redactor{
		home:      cleanDir(opts.Home),
		workspace: cleanDir(opts.Workspace),
	}
	seen := map[string]bool{}
	var secrets []string
	for _, s := range opts.Secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinSecretLen || seen[s] {
			continue
		}
		seen[s] = true
		secrets = append(secrets, s)
	}
	// Longest first, so a secret that starts with another is removed whole.
	sort.SliceStable(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		r.add(hint{lit: s, kind: kindSecret})
	}
	for i, ru := range rules {
		for _, t := range ru.triggers {
			r.add(hint{lit: t, kind: kindRule, rule: i})
		}
	}
	if r.home != "" {
		r.add(hint{lit: r.home, kind: kindHome})
	}
	return r
}

func (r *Redactor) add(h hint) {
	r.first[h.lit[0]] = append(r.first[h.lit[0]], h)
	p := pair(h.lit[0], h.lit[1])
	r.pairs[p/64] |= 1 << (p % 64)
}

func pair(a, b byte) uint32 { return uint32(a)<<8 | uint32(b) }

// at reports whether the hint's literal is at s[i:]. Every literal is at
// least two bytes long (secrets eight, triggers three, a home directory
// other than / two), so the second byte rules most positions out before
// the comparison.
func (h *hint) at(s string, i int) bool {
	return len(s)-i >= len(h.lit) && s[i+1] == h.lit[1] && s[i:i+len(h.lit)] == h.lit
}

func cleanDir(d string) string {
	if d == "" {
		return ""
	}
	d = filepath.Clean(d)
	if d == "/" || d == "." {
		// Every path starts with "/": replacing it would mangle them all.
		return ""
	}
	return d
}

// Redact returns s with secrets masked and the home directory shortened.
// Its method value is what loop.Options.Redact and dispatch.Config.Redact
// take.
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	var b strings.Builder
	last := 0 // s[last:i] is not yet written to b
	// The last byte cannot start a literal: each is two bytes or more.
	for i := 0; i+1 < len(s); i++ {
		if p := pair(s[i], s[i+1]); r.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		end, keep, from, ok := r.match(s, i, r.first[s[i]])
		if !ok {
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:keep])
		if from < 0 {
			b.WriteByte('~') // the home directory
		} else {
			b.WriteString(Mask)
			b.WriteString(s[from:end])
		}
		last = end
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// match tries the hints of s[i] in order. On a match, s[i:keep] is kept,
// s[keep:from] is replaced by the mask (or by ~ when from < 0, the home
// directory), s[from:end] is kept, and scanning resumes at end.
func (r *Redactor) match(s string, i int, hs []hint) (end, keep, from int, ok bool) {
	for j := range hs {
		h := &hs[j]
		if !h.at(s, i) {
			continue
		}
		switch h.kind {
		case kindSecret:
			end = r.overlap(s, i, i+len(h.lit))
			return end, i, end, true
		case kindRule:
			if end, keep, from, ok = rules[h.rule].apply(s, i); ok {
				return end, keep, from, true
			}
		case kindHome:
			if r.shortens(s, i) {
				return i + len(h.lit), i, -1, true
			}
		}
	}
	return 0, 0, 0, false
}

// overlap extends the end of a secret masked at s[i:end] over every
// configured secret that starts inside it and ends beyond it, so no part
// of a second secret is left showing after the first one's mask.
func (r *Redactor) overlap(s string, i, end int) int {
	for j := i + 1; j < end; j++ {
		for _, h := range r.first[s[j]] {
			if h.kind == kindSecret && j+len(h.lit) > end && h.at(s, j) {
				end = j + len(h.lit)
			}
		}
	}
	return end
}

// shortens reports whether the home directory found at s[i:] starts a path
// to replace with ~: it is not the middle of a longer path, it ends a path
// segment, and the path is not under the workspace.
func (r *Redactor) shortens(s string, i int) bool {
	if !startsPath(s, i) || !endsSegment(s, i+len(r.home)) {
		return false
	}
	at := s[i:]
	return !(r.workspace != "" && strings.HasPrefix(at, r.workspace) && endsSegment(at, len(r.workspace)))
}

// startsPath reports whether the match at i is not the middle of a longer
// path or word ("/mnt/home/ann" holds "/home/ann").
func startsPath(s string, i int) bool {
	if i == 0 {
		return true
	}
	c, _ := utf8.DecodeLastRuneInString(s[:i])
	return !isPathRune(c)
}

// endsSegment reports whether s[:end] ends a path segment ("/home/ann" is
// not the start of "/home/anna").
func endsSegment(s string, end int) bool {
	if end >= len(s) {
		return true
	}
	c, n := utf8.DecodeRuneInString(s[end:])
	if c == '.' {
		// A full stop after a path ends a sentence, not the segment
		// ("in /home/ann." but not "/home/ann.bak").
		return endsSegment(s, end+n) && (end+n >= len(s) || s[end+n] != '/')
	}
	return c == '/' || !isPathRune(c)
}

func isPathRune(c rune) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c == '~' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= utf8.RuneSelf
}
