// Package termtext makes text rein did not write — a file's lines in a
// diff, a tool's output, a call's arguments, a model's words — safe to
// show on a terminal: every character that would act on the terminal, or
// make the text read differently from what it is, is shown as a visible
// mark instead. Every terminal renderer (rein run's, the chat's cards and
// approval box) shows such text through Visible.
package termtext

import (
	"strings"
	"unicode/utf8"
)

// Visible returns s with every hidden or acting character shown as
// "<U+XXXX>" (a byte that is not UTF-8 as U+FFFD): C0 controls but tab
// and newline (escape sequences among them), DEL, C1 controls, the bidi
// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and
// the Arabic letter mark, which reorder what follows them — a right-to-left
// override makes a diff read differently from what it does — the
// zero-width characters and direction marks (U+200B–U+200F), the word
// joiner and invisible operators (U+2060–U+2064), the line and paragraph
// separators, the byte order mark (U+FEFF) and the interlinear annotation
// marks (U+FFF9–U+FFFB). Tabs and newlines are left for the renderer to
// lay out. Text with none of them is returned as it is, without a copy.
func Visible(s string) string {
	i := firstHidden(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i >= 0 {
		// s[:i] is clean; s[i] starts a character to mark.
		b.WriteString(s[:i])
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			mark(&b, r)
		}
		s = s[i+size:]
		i = firstHidden(s)
	}
	b.WriteString(s)
	return b.String()
}

// Hidden says r acts on the terminal or hides how text reads, so Visible
// marks it.
func Hidden(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n'
	case r < 0x7f:
		return false
	case r <= 0x9f:
		return true // DEL and the C1 controls
	case r < 0x61c:
		return false
	}
	switch {
	case r == 0x61c, // Arabic letter mark
		0x200b <= r && r <= 0x200f, // zero-width space, joiners, LRM, RLM
		r == 0x2028, r == 0x2029,   // line and paragraph separators
		0x202a <= r && r <= 0x202e, // bidi embeddings and overrides
		0x2060 <= r && r <= 0x2064, // word joiner, invisible operators
		0x2066 <= r && r <= 0x2069, // bidi isolates
		r == 0xfeff,                // byte order mark, zero-width no-break space
		0xfff9 <= r && r <= 0xfffb: // interlinear annotation
		return true
	}
	return false
}

// firstHidden returns the index of the first byte of s that Visible
// changes, or -1. ASCII is looked at byte by byte; only text beyond it is
// decoded.
func firstHidden(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || Hidden(r) {
			return i
		}
		i += size
	}
	return -1
}

// mark writes r as "<U+XXXX>", at least four hex digits.
func mark(b *strings.Builder, r rune) {
	const hex = "0123456789ABCDEF"
	var d [8]byte
	n := 0
	for v := uint32(r); v > 0 || n < 4; v >>= 4 {
		d[n] = hex[v&0xf]
		n++
	}
	b.WriteString("<U+")
	for n > 0 {
		n--
		b.WriteByte(d[n])
	}
	b.WriteByte('>')
}
