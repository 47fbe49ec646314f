package window

import (
	"strings"
	"unicode/utf8"
)

// cutMiddle keeps about keep of s's tokens — the head (60 %) and the tail
// (40 %), cut at line ends when one is near — with a marker between that
// says what was cut. tokens is s's count (or a fair estimate). It returns s
// unchanged when it already fits.
func cutMiddle(s string, tokens, keep int, marker func(cutTokens, cutLines int) string) string {
	if tokens <= keep || len(s) == 0 || keep <= 0 {
		return s
	}
	perToken := float64(len(s)) / float64(tokens)
	headLen := int(float64(keep) * 0.6 * perToken)
	tailLen := int(float64(keep) * 0.4 * perToken)
	if headLen+tailLen >= len(s) {
		return s
	}
	head := lineEnd(s, headLen)
	tail := lineStart(s, len(s)-tailLen)
	if tail <= head {
		return s
	}
	mid := s[head:tail]
	cut := int(float64(len(mid))/perToken + 0.5)
	return s[:head] + marker(cut, strings.Count(mid, "\n")) + s[tail:]
}

// lineEnd moves a cut at i back to just after a newline in the last quarter
// before it, else to a rune boundary.
func lineEnd(s string, i int) int {
	if j := strings.LastIndexByte(s[i-i/4:i], '\n'); j >= 0 {
		return i - i/4 + j + 1
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// lineStart moves a cut at i forward to the start of a line in the first
// quarter after it, else to a rune boundary.
func lineStart(s string, i int) int {
	q := (len(s) - i) / 4
	if j := strings.IndexByte(s[i:i+q], '\n'); j >= 0 {
		return i + j + 1
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
