package dispatch

import (
	"encoding/json"
	"strings"
)

// CanonicalArgs returns a call's arguments with keys sorted and no
// insignificant space, so the same call written two ways counts as one:
// for a round's duplicate calls and the engine's loop detection.
func CanonicalArgs(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || t == "{}" {
		return "{}"
	}
	if isCanonical(t) {
		// What decoding and encoding it again would write (most calls
		// come compact, keys in order): no need to, which cost a dozen
		// allocations a call.
		return t
	}
	return reencode(t)
}

// reencode returns t decoded and encoded again by encoding/json, or t when
// it is not JSON.
func reencode(t string) string {
	var v any
	if err := json.Unmarshal([]byte(t), &v); err != nil {
		return t
	}
	b, err := json.Marshal(v)
	if err != nil {
		return t
	}
	return string(b)
}

// maxCanonicalDepth bounds the nesting isCanonical follows; deeper
// arguments are re-encoded.
const maxCanonicalDepth = 16

// isCanonical reports whether t is exactly what encoding/json writes for
// the value it holds (decoded into an any): no space, object keys in
// strictly increasing order, strings of printable ASCII that need no
// escape, integers of up to 15 digits. It says false for much that is
// canonical too (escapes, fractions, deep nesting): those are re-encoded.
func isCanonical(t string) bool {
	n, ok := canonicalValue(t, 0, 0)
	return ok && n == len(t)
}

// canonicalValue checks the value at t[i:] and returns where it ends.
func canonicalValue(t string, i, depth int) (int, bool) {
	if i >= len(t) {
		return i, false
	}
	switch c := t[i]; {
	case c == '{':
		if depth >= maxCanonicalDepth {
			return i, false
		}
		i++
		if i < len(t) && t[i] == '}' {
			return i + 1, true
		}
		prev := ""
		for first := true; ; first = false {
			start := i
			var ok bool
			if i, ok = canonicalString(t, i); !ok {
				return i, false
			}
			key := t[start+1 : i-1]
			if !first && key <= prev {
				return i, false
			}
			prev = key
			if i >= len(t) || t[i] != ':' {
				return i, false
			}
			if i, ok = canonicalValue(t, i+1, depth+1); !ok {
				return i, false
			}
			if i >= len(t) {
				return i, false
			}
			if t[i] == '}' {
				return i + 1, true
			}
			if t[i] != ',' {
				return i, false
			}
			i++
		}
	case c == '[':
		if depth >= maxCanonicalDepth {
			return i, false
		}
		i++
		if i < len(t) && t[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonicalValue(t, i, depth+1); !ok {
				return i, false
			}
			if i >= len(t) {
				return i, false
			}
			if t[i] == ']' {
				return i + 1, true
			}
			if t[i] != ',' {
				return i, false
			}
			i++
		}
	case c == '"':
		return canonicalString(t, i)
	case c == '-' || c >= '0' && c <= '9':
		return canonicalInt(t, i)
	case strings.HasPrefix(t[i:], "true"):
		return i + 4, true
	case strings.HasPrefix(t[i:], "false"):
		return i + 5, true
	case strings.HasPrefix(t[i:], "null"):
		return i + 4, true
	}
	return i, false
}

// canonicalString checks a string at t[i:] that encoding/json writes as it
// stands: printable ASCII without a quote, a backslash, or one of <, >, &
// (which it escapes).
func canonicalString(t string, i int) (int, bool) {
	if i >= len(t) || t[i] != '"' {
		return i, false
	}
	for i++; i < len(t); i++ {
		switch c := t[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&':
			return i, false
		}
	}
	return i, false
}

// canonicalInt checks an integer at t[i:] that a float64 holds exactly and
// encoding/json writes as it stands: no leading zero, no "-0", at most 15
// digits.
func canonicalInt(t string, i int) (int, bool) {
	if t[i] == '-' {
		i++
	}
	start := i
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	digits := t[start:i]
	switch {
	case len(digits) == 0 || len(digits) > 15:
		return i, false
	case digits[0] == '0' && (len(digits) > 1 || start > 0 && t[start-1] == '-'):
		return i, false
	case i < len(t) && (t[i] == '.' || t[i] == 'e' || t[i] == 'E'):
		return i, false
	}
	return i, true
}
