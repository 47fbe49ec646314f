package termtext

import (
	"strings"
	"testing"
)

func TestVisibleMarksWhatActsOnTheTerminalOrHidesHowTextReads(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain text is kept", "port = 8080\n\tindented", "port = 8080\n\tindented"},
		{"accents and CJK are kept", "café 東京 — ok", "café 東京 — ok"},
		{"an emoji is kept", "ok 👍", "ok 👍"},
		{"escape sequence", "a\x1b[2Jb", "a<U+001B>[2Jb"},
		{"OSC 52 and BEL", "\x1b]52;c;cGF3bmVk\x07", "<U+001B>]52;c;cGF3bmVk<U+0007>"},
		{"carriage return", "ok\roverwritten", "ok<U+000D>overwritten"},
		{"NUL and DEL", "a\x00b\x7fc", "a<U+0000>b<U+007F>c"},
		{"C1 CSI", "a\u009b2Jb", "a<U+009B>2Jb"},
		{"right-to-left override", "if isAdmin \u202e } \u2066// check\u2069 {", "if isAdmin <U+202E> } <U+2066>// check<U+2069> {"},
		{"every embedding and override", "\u202a\u202b\u202c\u202d\u202e", "<U+202A><U+202B><U+202C><U+202D><U+202E>"},
		{"every isolate", "\u2066\u2067\u2068\u2069", "<U+2066><U+2067><U+2068><U+2069>"},
		{"zero-width and direction marks", "a\u200bb\u200cc\u200dd\u200ee\u200ff", "a<U+200B>b<U+200C>c<U+200D>d<U+200E>e<U+200F>f"},
		{"byte order mark", "\ufeffpackage main", "<U+FEFF>package main"},
		{"Arabic letter mark, separators, word joiner", "a\u061cb\u2028c\u2029d\u2060e", "a<U+061C>b<U+2028>c<U+2029>d<U+2060>e"},
		{"bytes that are not UTF-8", "a\xe2\x80b", "a\ufffd\ufffdb"},
		{"a split override cannot rejoin", "\xe2\x80", "\ufffd\ufffd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Visible(c.in); got != c.want {
				t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
			}
			if got := Visible(c.want); got != c.want && !strings.Contains(c.in, "\xe2") {
				t.Errorf("Visible is not idempotent on %q: %q", c.want, got)
			}
		})
	}
}

func TestVisibleDoesNotCopyCleanText(t *testing.T) {
	s := strings.Repeat("a clean line of text ", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Visible(s) }); n != 0 {
		t.Errorf("%v allocations for clean text, want 0", n)
	}
}

func BenchmarkVisible(b *testing.B) {
	clean := strings.Repeat("func main() { fmt.Println(\"héllo\") }\n", 256)
	hostile := strings.Repeat("x := 1 \u202e// comment\u2066\n", 256)
	for _, c := range []struct{ name, s string }{{"clean", clean}, {"hostile", hostile}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				_ = Visible(c.s)
			}
		})
	}
}
