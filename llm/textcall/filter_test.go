package textcall

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/think"
)

// stream runs chunks through a think filter and a DSML filter, as an adapter
// does, and returns the visible text and the calls. It checks what every
// Write must keep: valid UTF-8 out for valid UTF-8 in, and at most a tag's
// worth of prose held back.
func stream(t testing.TB, o Options, chunks []string) (string, []llm.Call) {
	t.Helper()
	th := think.NewFilter(o.Think)
	f := NewFilter(o)
	var vis strings.Builder
	var calls []llm.Call
	valid := utf8.ValidString(strings.Join(chunks, ""))
	put := func(text string, cs []llm.Call) {
		if valid && !utf8.ValidString(text) {
			t.Fatalf("chunks %q: released %q, not valid UTF-8", chunks, text)
		}
		vis.WriteString(text)
		calls = append(calls, cs...)
	}
	write := func(segs []think.Segment) {
		for _, s := range segs {
			if !s.Thinking {
				put(f.Write(s.Text))
			}
		}
	}
	for _, c := range chunks {
		write(th.Write(c))
		if f.st == inText && len(f.pend) >= maxTagLen {
			t.Fatalf("chunks %q: holding %d bytes of prose: %q", chunks, len(f.pend), f.pend)
		}
	}
	write(th.Flush())
	put(f.Flush())
	return vis.String(), calls
}

// splits returns the ways the tests cut an input: at every byte position into
// two, and byte by byte.
func splits(s string) [][]string {
	var out [][]string
	for i := 1; i < len(s); i++ {
		out = append(out, []string{s[:i], s[i:]})
	}
	var bytes []string
	for i := 0; i < len(s); i++ {
		bytes = append(bytes, s[i:i+1])
	}
	return append(out, bytes)
}

func sameCalls(a, b []llm.Call) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Args != b[i].Args || a[i].Format != b[i].Format {
			return false
		}
	}
	return true
}

func TestFilterMatchesParseAtEverySplit(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Catalog: tt.catalog, Think: tt.think}
			for _, ch := range splits(tt.in) {
				visible, calls := stream(t, o, ch)
				if visible != tt.visible {
					t.Fatalf("chunks %q: visible %q, want %q", ch, visible, tt.visible)
				}
				checkCalls(t, calls, tt.calls)
			}
		})
	}
}

// TestFilterReleasesAtOnce checks what a single Write returns before any
// later chunk could help: only plausible DSML prefixes wait.
func TestFilterReleasesAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		chunk string
		want  string
		calls int
	}{
		{"less-than in prose", "if a < b then c", "if a < b then c", 0},
		{"less-than before a digit", "x<3 and y", "x<3 and y", 0},
		{"html tags", "a <b>bold</b> c", "a <b>bold</b> c", 0},
		{"a bar that does not lead to DSML", "a <|x| b", "a <|x| b", 0},
		{"a close tag that is not DSML", "a </b> c", "a </b> c", 0},
		{"lone < is held", "a <", "a", 0},
		{"slash is held", "a </", "a", 0},
		{"half a fullwidth bar is held", "a <\xef\xbd", "a", 0},
		{"marker prefix is held", "a <｜DS", "a", 0},
		{"ASCII marker prefix is held", "a <||DSML|", "a", 0},
		{"open tag with attributes is held", `a <｜DSML｜invoke name="x`, "a", 0},
		{"an incomplete rune is held", "ab \xe6\x97", "ab", 0},
		{"trailing white space waits for text", "a  \n", "a", 0},
		{"orphan tag dropped at once", "Done.</｜DSML｜invoke> more", "Done. more", 0},
		{"complete block makes its calls at once", exampleC, "Great job!  Choose what to study next.", 1},
		{"prose after an open wrapper is released", `<｜DSML｜tool_calls><｜DSML｜invoke name="x"></｜DSML｜invoke>` + "\nMore text", "More text", 1},
		{"a block waits for its end", "See:\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"x\">", "See:", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFilter(Options{})
			got, calls := f.Write(tt.chunk)
			if got != tt.want || len(calls) != tt.calls {
				t.Fatalf("Write(%q) = %q, %d calls; want %q, %d calls", tt.chunk, got, len(calls), tt.want, tt.calls)
			}
		})
	}
}

// TestFilterFedRawTextParsesReasoning documents why a Filter must be fed
// think content only: it does not know about think tags itself.
func TestFilterFedRawTextParsesReasoning(t *testing.T) {
	in := `<think><｜DSML｜invoke name="exec"></｜DSML｜invoke></think>ok`
	f := NewFilter(Options{})
	_, calls := f.Write(in)
	if len(calls) != 1 {
		t.Fatalf("got %d calls from raw text, want 1: this test pins the contract", len(calls))
	}
	if _, calls := Parse(in, Options{}); len(calls) != 0 {
		t.Fatalf("Parse made %d calls from reasoning", len(calls))
	}
	if _, calls := stream(t, Options{}, []string{in}); len(calls) != 0 {
		t.Fatalf("think then DSML made %d calls from reasoning", len(calls))
	}
}

func TestFilterReuseAfterFlush(t *testing.T) {
	f := NewFilter(Options{})
	first, _ := f.Write("one <｜DSML｜tool_calls>")
	if rest, calls := f.Flush(); first+rest != "one <｜DSML｜tool_calls>" || calls != nil {
		t.Fatalf("first stream = %q, %v", first+rest, calls)
	}
	got, calls := f.Write("  two " + exampleB)
	if more, more2 := f.Flush(); more != "" || more2 != nil {
		t.Fatalf("second Flush = %q, %v", more, more2)
	}
	if got != "two" || len(calls) != 1 || calls[0].Name != "exec" {
		t.Fatalf("second stream = %q, %+v", got, calls)
	}
}
