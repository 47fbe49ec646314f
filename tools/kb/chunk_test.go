package kb

import (
	"strings"
	"testing"
)

// span is an expected chunk: its line range and text.
type span struct {
	start, end int
	text       string
}

func TestChunk(t *testing.T) {
	para := strings.Repeat("word ", 60) // 300 bytes
	long := strings.Repeat("x", ChunkMax+10)
	tests := []struct {
		name string
		text string
		want []span // text "" means: do not compare the text
	}{
		{"empty", "", nil},
		{"blank lines only", "\n  \n\n", nil},
		{"one paragraph", "a\nb\n", []span{{1, 2, "a\nb"}}},
		{"leading blank lines are not in the range", "\n\na\n", []span{{3, 3, "a"}}},
		{"headings start chunks", "# A\ntext\n## B\nmore\n", []span{{1, 2, "# A\ntext"}, {3, 4, "## B\nmore"}}},
		{"not a heading", "#hashtag\n#!shebang\n", []span{{1, 2, "#hashtag\n#!shebang"}}},
		{"CRLF", "a\r\nb\r\n", []span{{1, 2, "a\nb"}}},
		{"blank line after the target ends a chunk",
			strings.Repeat(para+"\n", 4) + "\n" + "tail\n",
			[]span{{1, 5, ""}, {6, 6, "tail"}}},
		{"a long line is cut", long + "\nz\n", []span{{1, 1, ""}, {1, 2, ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Chunk(tc.text)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d chunks %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.StartLine != w.start || g.EndLine != w.end || (w.text != "" && g.Text != w.text) {
					t.Errorf("chunk %d = %d-%d %q, want %d-%d %q", i, g.StartLine, g.EndLine, g.Text, w.start, w.end, w.text)
				}
				if len(g.Text) > ChunkMax {
					t.Errorf("chunk %d has %d bytes, more than %d", i, len(g.Text), ChunkMax)
				}
			}
		})
	}
}

func TestChunkKeepsEveryLineOnce(t *testing.T) {
	var b strings.Builder
	for i := range 500 {
		b.WriteString(strings.Repeat("w", i%90))
		b.WriteByte('\n')
		if i%37 == 0 {
			b.WriteString("## heading\n")
		}
	}
	text := b.String()
	var joined []string
	last := 0
	for _, c := range Chunk(text) {
		if c.StartLine <= last || c.EndLine < c.StartLine || len(c.Text) > ChunkMax {
			t.Fatalf("chunk %d-%d after line %d (%d bytes)", c.StartLine, c.EndLine, last, len(c.Text))
		}
		last = c.EndLine
		joined = append(joined, c.Text)
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if squash(strings.Join(joined, "\n")) != squash(text) {
		t.Fatal("the chunks do not add up to the text")
	}
}

func TestIsText(t *testing.T) {
	big := strings.Repeat("a", 8<<10-1) + "é" // the window cuts é
	tests := []struct {
		in   string
		want bool
	}{
		{"plain", true},
		{"", true},
		{"héllo ✓", true},
		{"nul\x00byte", false},
		{"bad \xff utf8", false},
		{"ends badly \xc3", false},
		{big + "more", true},
	}
	for _, tc := range tests {
		if got := isText([]byte(tc.in)); got != tc.want {
			t.Errorf("isText(%.20q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
