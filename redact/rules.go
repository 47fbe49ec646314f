package redact

import (
	"regexp"
	"strings"
)

// rule is a secret shape. Every match starts with one of its triggers, so
// its expression runs only where a trigger is, anchored there: text
// without secrets costs one pass and no allocation, and text with one
// costs little more.
type rule struct {
	triggers []string
	// re matches at the start of the text it is given (it begins with ^).
	re *regexp.Regexp
	// mask is the submatch replaced by Mask, the rest of the match kept
	// (a header name before it, the @ of a URL after it); 0 masks the
	// whole match.
	mask int
	// inWord lets a trigger match after a letter or digit: "://" follows
	// its scheme. Other triggers must start a word, so "task-…" is not
	// taken for "sk-…".
	inWord bool
	// check, when set, must accept the match for it to be masked.
	check func(string) bool
}

// apply masks the rule's match at s[i:], if any (see Redactor.match).
func (ru *rule) apply(s string, i int) (end, keep, from int, ok bool) {
	if !ru.inWord && !wordStart(s, i) {
		return 0, 0, 0, false
	}
	m := ru.re.FindStringSubmatchIndex(s[i:])
	if m == nil || m[2*ru.mask] < 0 || ru.check != nil && !ru.check(s[i:i+m[1]]) {
		return 0, 0, 0, false
	}
	return i + m[1], i + m[2*ru.mask], i + m[2*ru.mask+1], true
}

// wordStart reports whether s[i] starts a word: no letter, digit or _
// before it, or the n, r or t of an escape ("\nghp_…" in JSON text).
func wordStart(s string, i int) bool {
	if i == 0 || !isWordByte(s[i-1]) {
		return true
	}
	return i >= 2 && s[i-2] == '\\' && strings.IndexByte("nrt", s[i-1]) >= 0
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
		re:       regexp.MustCompile(`^(?i:(?:proxy-)?authorization)["']?\s*[:=]\s*["']?([^\r\n"']+)`),
		mask:     1,
	},
	{
		triggers: []string{"Bearer", "bearer", "BEARER"},
		re:       regexp.MustCompile(`^(?i:bearer)\s+([A-Za-z0-9\-._~+/]{8,}=*)`),
		mask:     1,
	},
	{
		// The password of a URL's userinfo: scheme://user:PASSWORD@host.
		triggers: []string{"://"},
		re:       regexp.MustCompile(`^://[^\s/?#@:"'<>]*:([^\s/?#@"'<>]+)@`),
		mask:     1,
		inWord:   true,
	},
	{
		// Anthropic sk-ant-…, OpenAI sk-…, sk-proj-…, sk-svcacct-….
		triggers: []string{"sk-"},
		re:       regexp.MustCompile(`^sk-[A-Za-z0-9_\-]{16,}`),
		check:    hasDigit,
	},
	{
		// Stripe secret and restricted keys.
		triggers: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"},
		re:       regexp.MustCompile(`^[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`),
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
		triggers: []string{"glpat-"},
		re:       regexp.MustCompile(`^glpat-[A-Za-z0-9_\-]{20,}`),
	},
	{
		triggers: []string{"xox"},
		re:       regexp.MustCompile(`^xox[abposre]-[A-Za-z0-9\-]{10,}`),
	},
	{
		triggers: []string{"AKIA", "ASIA"},
		re:       regexp.MustCompile(`^(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
	},
	{
		// Google API keys.
		triggers: []string{"AIza"},
		re:       regexp.MustCompile(`^AIza[A-Za-z0-9_\-]{35}`),
	},
	{
		// Hugging Face and npm access tokens.
		triggers: []string{"hf_", "npm_"},
		re:       regexp.MustCompile(`^(?:hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36})`),
		check:    hasDigit,
	},
	{
		// JSON Web Tokens: a header and a payload, both JSON objects in
		// base64url ("eyJ" is `{"`), then the signature.
		triggers: []string{"eyJ"},
		re:       regexp.MustCompile(`^eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
	},
	{
		// PEM private keys, the whole block; an unterminated one to the
		// end of the text.
		triggers: []string{"-----BEGIN "},
		re:       regexp.MustCompile(`^-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|.*)`),
		inWord:   true,
	},
}
