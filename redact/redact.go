// Package redact removes secrets from text before it reaches a model, a log
// or an event (DESIGN §3): API keys and tokens recognised by their shape,
// Authorization header values, the values of configured secrets, and the
// home directory, which becomes ~ except inside the workspace.
package redact

import (
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
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
	// Secrets are values to remove wherever they appear.
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
	secrets   []string
	home      string
	workspace string
	// first indexes every literal that hints at something to clean by its
	// first byte, so one pass over the text finds which rules can match.
	first [256][]hint
}

// hint is a literal whose presence makes a rule worth running.
type hint struct {
	lit string
	bit uint64
}

// Bits of a scan: one per rule, then the configured secrets and the home
// directory.
const (
	bitSecrets = 1 << 62
	bitHome    = 1 << 63
)

// New returns a redactor for opts.
func New(opts Options) *Redactor {
	r := &Redactor{
		home:      cleanDir(opts.Home),
		workspace: cleanDir(opts.Workspace),
	}
	seen := map[string]bool{}
	for _, s := range opts.Secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinSecretLen || seen[s] {
			continue
		}
		seen[s] = true
		r.secrets = append(r.secrets, s)
	}
	// Longest first, so a secret that contains another is removed whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	for i, ru := range rules {
		for _, t := range ru.triggers {
			r.addHint(t, 1<<i)
		}
	}
	for _, s := range r.secrets {
		r.addHint(s, bitSecrets)
	}
	if r.home != "" {
		r.addHint(r.home, bitHome)
	}
	return r
}

func (r *Redactor) addHint(lit string, bit uint64) {
	r.first[lit[0]] = append(r.first[lit[0]], hint{lit: lit, bit: bit})
}

// scan returns the bits of the hints present in s.
func (r *Redactor) scan(s string) uint64 {
	var found uint64
	for i := 0; i < len(s); i++ {
		hs := r.first[s[i]]
		for j := range hs {
			if strings.HasPrefix(s[i:], hs[j].lit) {
				found |= hs[j].bit
			}
		}
	}
	return found
}

// FromEnv returns a redactor for opts plus the secrets of the process
// environment (see EnvSecrets) and, when opts.Home is empty, the user's home
// directory.
func FromEnv(opts Options) *Redactor {
	opts.Secrets = append(append([]string(nil), opts.Secrets...), EnvSecrets(os.Environ())...)
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	return New(opts)
}

// secretSuffixes are the endings of environment variable names whose values
// are secrets.
var secretSuffixes = []string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASS", "_PAT", "_CREDENTIALS"}

// EnvSecrets returns the values of the variables in environ ("NAME=value")
// whose names end in _KEY, _TOKEN, _SECRET, _PASSWORD, _PASS, _PAT or
// _CREDENTIALS (in any case).
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			continue
		}
		upper := strings.ToUpper(name)
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(upper, suf) {
				out = append(out, val)
				break
			}
		}
	}
	return out
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
// Its method value is what dispatch.Config.Redact takes.
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	found := r.scan(s)
	if found == 0 {
		return s
	}
	if found&bitSecrets != 0 {
		for _, sec := range r.secrets {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	if found&^(bitSecrets|bitHome) != 0 {
		s = r.applyRules(s)
	}
	if found&bitHome != 0 {
		s = r.shortenHome(s)
	}
	return s
}

// rule is a secret shape. Every match starts with one of its triggers, so
// its expression runs only where a trigger is, anchored there: text
// without secrets costs one pass and no allocation, and text with one
// costs little more.
type rule struct {
	triggers []string
	// re matches at the start of the text it is given (it begins with ^).
	re *regexp.Regexp
	// keepName keeps the first submatch (a header name, "Bearer ") before
	// the mask; otherwise the whole match is masked.
	keepName bool
	// check, when set, must accept the match for it to be masked.
	check func(string) bool
}

// applyRules masks every match of a rule, scanning s once.
func (r *Redactor) applyRules(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		hs := r.first[s[i]]
		for j := range hs {
			h := &hs[j]
			if h.bit >= bitSecrets || !strings.HasPrefix(s[i:], h.lit) || (i > 0 && isWordByte(s[i-1])) {
				continue
			}
			ru := &rules[bits.TrailingZeros64(h.bit)]
			m := ru.re.FindStringSubmatchIndex(s[i:])
			if m == nil || ru.check != nil && !ru.check(s[i:i+m[1]]) {
				continue
			}
			b.WriteString(s[last:i])
			if ru.keepName {
				b.WriteString(s[i : i+m[3]])
			}
			b.WriteString(Mask)
			last = i + m[1]
			i = last - 1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// hasDigit rejects words shaped like keys ("sk-learn-compatible-models"):
// generated keys are random and so all but surely hold a digit.
func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

// rules are tried in order at each position: header names first, so
// "Authorization: Bearer sk-…" is masked once, as a header value.
var rules = []rule{
	{
		// Authorization: VALUE (header lines, JSON, YAML), to the end of
		// the line or the closing quote.
		triggers: []string{"Authorization", "authorization", "AUTHORIZATION", "Proxy-Authorization", "proxy-authorization"},
		re:       regexp.MustCompile(`^((?i:(?:proxy-)?authorization)["']?\s*[:=]\s*["']?)[^\r\n"']+`),
		keepName: true,
	},
	{
		triggers: []string{"Bearer", "bearer", "BEARER"},
		re:       regexp.MustCompile(`^((?i:bearer)\s+)[A-Za-z0-9\-._~+/]{8,}=*`),
		keepName: true,
	},
	{
		// Anthropic sk-ant-…, OpenAI sk-…, sk-proj-…, sk-svcacct-….
		triggers: []string{"sk-"},
		re:       regexp.MustCompile(`^sk-[A-Za-z0-9_\-]{16,}`),
		check:    hasDigit,
	},
	{
		triggers: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		re:       regexp.MustCompile(`^gh[pousr]_[A-Za-z0-9]{30,}`),
	},
	{
		triggers: []string{"github_pat_"},
		re:       regexp.MustCompile(`^github_pat_[A-Za-z0-9_]{20,}`),
	},
	{
		triggers: []string{"xox"},
		re:       regexp.MustCompile(`^xox[abposre]-[A-Za-z0-9\-]{10,}`),
	},
	{
		triggers: []string{"AKIA", "ASIA"},
		re:       regexp.MustCompile(`^(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
	},
}

// shortenHome replaces the home directory with ~ where it starts a path,
// except where the path is under the workspace.
func (r *Redactor) shortenHome(s string) string {
	if !strings.Contains(s, r.home) {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, r.home)
		if i < 0 {
			break
		}
		end := i + len(r.home)
		at := rest[i:]
		replace := startsPath(rest, i) && endsSegment(rest, end) &&
			!(r.workspace != "" && strings.HasPrefix(at, r.workspace) && endsSegment(at, len(r.workspace)))
		b.WriteString(rest[:i])
		if replace {
			b.WriteByte('~')
		} else {
			b.WriteString(r.home)
		}
		rest = rest[end:]
	}
	b.WriteString(rest)
	return b.String()
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
