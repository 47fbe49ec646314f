package think

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// merge joins adjacent segments of one kind, so outputs of different
// chunkings can be compared.
func merge(segs []Segment) []Segment {
	var out []Segment
	for _, s := range segs {
		out = appendSegment(out, s.Thinking, s.Text)
	}
	return out
}

// feed runs chunks through a new filter and returns all segments, checking
// the invariants every Write must keep.
func feed(t testing.TB, o Options, chunks []string) []Segment {
	t.Helper()
	f := NewFilter(o)
	var all []Segment
	check := func(segs []Segment) {
		for i, s := range segs {
			if s.Text == "" {
				t.Fatalf("empty segment in %q", chunks)
			}
			if i > 0 && segs[i-1].Thinking == s.Thinking {
				t.Fatalf("unmerged segments %+v in %q", segs, chunks)
			}
		}
		all = append(all, segs...)
	}
	for _, c := range chunks {
		check(f.Write(c))
		if len(f.held) > MaxTagLen {
			t.Fatalf("held %d bytes (%q) after %q", len(f.held), f.held, chunks)
		}
	}
	check(f.Flush())
	if f.held != "" {
		t.Fatalf("held %q after Flush", f.held)
	}
	return merge(all)
}

// splits returns the ways the tests cut an input: whole, at every byte
// position into two, and byte by byte.
func splits(s string) [][]string {
	out := [][]string{{s}}
	for i := 1; i < len(s); i++ {
		out = append(out, []string{s[:i], s[i:]})
	}
	var bytes []string
	for i := 0; i < len(s); i++ {
		bytes = append(bytes, s[i:i+1])
	}
	return append(out, bytes)
}

func c(s string) Segment  { return Segment{Text: s} }
func th(s string) Segment { return Segment{Thinking: true, Text: s} }

func equal(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var filterTests = []struct {
	name   string
	inside bool
	chunks []string
	want   []Segment
}{
	// The rows of the table in deeptutor-loop-spec §7, with the fixes of
	// DESIGN §5.1.
	{"tags split across chunks", false, []string{"before<thi", "nk>inner</th", "ink>after"}, []Segment{c("before"), th("inner"), c("after")}},
	{"lone < at a chunk end", false, []string{"start <", "think>in</think>end"}, []Segment{c("start "), th("in"), c("end")}},
	{"a less-than sign in prose", false, []string{"a < b and c"}, []Segment{c("a < b and c")}},
	{"unclosed block stays thinking", false, []string{"<think>only reasoning"}, []Segment{th("only reasoning")}},
	{"tags in any case", false, []string{"<THINKING>x</Thinking>y"}, []Segment{th("x"), c("y")}},
	{"other tags pass", false, []string{"ans <b>bold</b>"}, []Segment{c("ans <b>bold</b>")}},
	{"thinker is not a tag", false, []string{"<thinker>abc"}, []Segment{c("<thinker>abc")}},
	{"think-tank is not a tag", false, []string{"<think-tank>abc"}, []Segment{c("<think-tank>abc")}},
	{"prose after <think is not a tag", false, []string{"I <think this is right> yes"}, []Segment{c("I <think this is right> yes")}},
	{"stray close tag dropped", false, []string{"<", "/think>"}, nil},
	{"stray close tag between content", false, []string{"a</think>b"}, []Segment{c("ab")}},
	{"long text after <", false, []string{"text ends with <" + strings.Repeat("x", 30)}, []Segment{c("text ends with <" + strings.Repeat("x", 30))}},

	{"attributes on the open tag", false, []string{`<think type="brief" n=2 k='v'>x</think>y`}, []Segment{th("x"), c("y")}},
	{"whitespace inside tags", false, []string{"<think\n>x</thinking >y"}, []Segment{th("x"), c("y")}},
	{"attribute without value is prose", false, []string{"<think a>x"}, []Segment{c("<think a>x")}},
	{"junk after quoted value is prose", false, []string{`<think a="1"b>x`}, []Segment{c(`<think a="1"b>x`)}},
	{"self-closing form is not a tag", false, []string{"<think/>x"}, []Segment{c("<think/>x")}},
	{"space after < is not a tag", false, []string{"< think>x"}, []Segment{c("< think>x")}},
	{"tag longer than MaxTagLen is prose", false, []string{`<think note="` + strings.Repeat("a", 30) + `">x`}, []Segment{c(`<think note="` + strings.Repeat("a", 30) + `">x`)}},
	{"open tag inside thinking dropped", false, []string{"<think>a<think>b</think>c"}, []Segment{th("ab"), c("c")}},
	{"two blocks", false, []string{"<think>a</think>b<thinking>c</thinking>d"}, []Segment{th("a"), c("b"), th("c"), c("d")}},
	{"empty block", false, []string{"a<think></think>b"}, []Segment{c("ab")}},
	{"unclosed partial tag at the end is content", false, []string{"x <thin"}, []Segment{c("x <thin")}},
	{"partial close at the end stays thinking", false, []string{"<think>x </thi"}, []Segment{th("x </thi")}},
	{"multibyte text", false, []string{"héllo <think>日本</think>語 ‖"}, []Segment{c("héllo "), th("日本"), c("語 ‖")}},

	{"starts inside: reasoning then answer", true, []string{"reasoning…</think>answer"}, []Segment{th("reasoning…"), c("answer")}},
	{"starts inside: explicit open tag dropped", true, []string{"<think>\nr</think>\n\na"}, []Segment{th("\nr"), c("\n\na")}},
	{"starts inside: never closed", true, []string{"all reasoning"}, []Segment{th("all reasoning")}},
	{"starts inside: empty stream", true, nil, nil},
}

func TestFilter(t *testing.T) {
	for _, tt := range filterTests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{StartInside: tt.inside}
			if got := feed(t, o, tt.chunks); !equal(got, tt.want) {
				t.Fatalf("chunks %q: got %+v, want %+v", tt.chunks, got, tt.want)
			}
			in := strings.Join(tt.chunks, "")
			for _, ch := range splits(in) {
				if got := feed(t, o, ch); !equal(got, tt.want) {
					t.Fatalf("chunks %q: got %+v, want %+v", ch, got, tt.want)
				}
			}
			if got := merge(Split(in, o)); !equal(got, tt.want) {
				t.Fatalf("Split: got %+v, want %+v", got, tt.want)
			}
			var content strings.Builder
			for _, s := range tt.want {
				if !s.Thinking {
					content.WriteString(s.Text)
				}
			}
			if got := Strip(in, o); got != content.String() {
				t.Fatalf("Strip = %q, want %q", got, content.String())
			}
		})
	}
}

// TestFilterReleasesAtOnce checks what the first Write returns, before any
// later chunk could help: text that cannot be a tag must not wait.
func TestFilterReleasesAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		chunk string
		want  []Segment
	}{
		{"less-than followed by space", "if a < b then", []Segment{c("if a < b then")}},
		{"less-than followed by digit", "x<3", []Segment{c("x<3")}},
		{"html tag", "a <b>bold</b>", []Segment{c("a <b>bold</b>")}},
		{"prose after <think", "I <think about it", []Segment{c("I <think about it")}},
		{"lone < is held", "a <", []Segment{c("a ")}},
		{"open tag prefix is held", "a <thin", []Segment{c("a ")}},
		{"attribute prefix is held", `a <think t="x`, []Segment{c("a ")}},
		{"incomplete rune is held", "ab\xe6\x97", []Segment{c("ab")}},
		{"closed block is released", "<think>r</think>a", []Segment{th("r"), c("a")}},
		{"thinking is released inside the block", "<think>abc", []Segment{th("abc")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFilter(Options{})
			if got := f.Write(tt.chunk); !equal(got, tt.want) {
				t.Fatalf("Write(%q) = %+v, want %+v", tt.chunk, got, tt.want)
			}
		})
	}
}

// TestFilterKeepsRunesWhole checks that no segment ends inside a UTF-8
// sequence when the input is valid, at every split.
func TestFilterKeepsRunesWhole(t *testing.T) {
	in := "思考 <think>日本語‖｜</think>答え ü"
	for _, ch := range splits(in) {
		f := NewFilter(Options{})
		for _, part := range append(ch, "") {
			var segs []Segment
			if part == "" {
				segs = f.Flush()
			} else {
				segs = f.Write(part)
			}
			for _, s := range segs {
				if !utf8.ValidString(s.Text) {
					t.Fatalf("chunks %q: segment %q is not valid UTF-8", ch, s.Text)
				}
			}
		}
	}
}

func TestThinking(t *testing.T) {
	f := NewFilter(Options{})
	f.Write("a<think>b")
	if !f.Thinking() {
		t.Fatal("Thinking() = false inside a block")
	}
	f.Write("</think>")
	if f.Thinking() {
		t.Fatal("Thinking() = true after the close tag")
	}
}

// Reference grammar for the property test, written independently of the
// matcher.
var (
	refOpen  = regexp.MustCompile("^(?i)<think(?:ing)?(?:[ \\t\\n\\r\\f]+[a-z_:][-a-z0-9_:.]*=(?:\"[^\"<>]*\"|'[^'<>]*'|[^ \\t\\n\\r\\f\"'<>=`]+))*[ \\t\\n\\r\\f]*>")
	refClose = regexp.MustCompile(`^(?i)</think(?:ing)?[ \t\n\r\f]*>`)
)

// reference splits s the slow way: at each '<' try both tags.
func reference(s string, inside bool) []Segment {
	var out []Segment
	var cur strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '<' {
			w := s[i:min(len(s), i+MaxTagLen)]
			if m := refOpen.FindString(w); m != "" {
				out = appendSegment(out, inside, cur.String())
				cur.Reset()
				inside = true
				i += len(m)
				continue
			}
			if m := refClose.FindString(w); m != "" {
				out = appendSegment(out, inside, cur.String())
				cur.Reset()
				inside = false
				i += len(m)
				continue
			}
		}
		cur.WriteByte(s[i])
		i++
	}
	return appendSegment(out, inside, cur.String())
}

func TestFilterMatchesReference(t *testing.T) {
	for _, tt := range filterTests {
		in := strings.Join(tt.chunks, "")
		if got, want := Split(in, Options{StartInside: tt.inside}), reference(in, tt.inside); !equal(got, want) {
			t.Errorf("%s: Split = %+v, reference = %+v", tt.name, got, want)
		}
	}
}

func FuzzFilter(f *testing.F) {
	for _, tt := range filterTests {
		f.Add(strings.Join(tt.chunks, ""), uint64(7), tt.inside)
	}
	f.Fuzz(func(t *testing.T, in string, cuts uint64, inside bool) {
		o := Options{StartInside: inside}
		want := reference(in, inside)
		if got := merge(Split(in, o)); !equal(got, want) {
			t.Fatalf("Split(%q) = %+v, reference %+v", in, got, want)
		}
		// Cut the input where the bits of cuts say, cycling over them.
		var chunks []string
		start := 0
		for i := 1; i < len(in); i++ {
			if cuts>>(uint(i)%64)&1 == 1 {
				chunks = append(chunks, in[start:i])
				start = i
			}
		}
		chunks = append(chunks, in[start:])
		if got := feed(t, o, chunks); !equal(got, want) {
			t.Fatalf("chunks %q: got %+v, reference %+v", chunks, got, want)
		}
	})
}

func BenchmarkFilter(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		sb.WriteString("<think>Let me weigh a < b against the other case; 日本語 too.</think>")
		sb.WriteString("The answer is <b>42</b>, since x<3 and y > 2.\n")
	}
	in := sb.String()
	const chunk = 16
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		f := NewFilter(Options{})
		for i := 0; i < len(in); i += chunk {
			f.Write(in[i:min(len(in), i+chunk)])
		}
		f.Flush()
	}
}

func BenchmarkStrip(b *testing.B) {
	in := strings.Repeat("<think>reasoning about a < b</think>The answer. ", 100)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Strip(in, Options{})
	}
}

func TestSplitRaw(t *testing.T) {
	tests := []struct {
		in   string
		o    Options
		want []Segment
	}{
		{"<think>hmm</think>Hello", Options{}, []Segment{th("<think>hmm</think>"), c("Hello")}},
		{"a <THINKING n=1>x</Thinking >b", Options{}, []Segment{c("a "), th("<THINKING n=1>x</Thinking >"), c("b")}},
		{"a</think>b", Options{}, []Segment{c("a</think>b")}},
		{"<think>a<think>b</think>c", Options{}, []Segment{th("<think>a<think>b</think>"), c("c")}},
		{"<think>never closed", Options{}, []Segment{th("<think>never closed")}},
		{"r</think>a", Options{StartInside: true}, []Segment{th("r</think>"), c("a")}},
	}
	for _, tt := range tests {
		if got := SplitRaw(tt.in, tt.o); !equal(got, tt.want) {
			t.Errorf("SplitRaw(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	// Nothing is lost, and the content is Split's wherever no tag is stray.
	for _, tt := range filterTests {
		in := strings.Join(tt.chunks, "")
		o := Options{StartInside: tt.inside}
		var all, content strings.Builder
		for _, s := range SplitRaw(in, o) {
			all.WriteString(s.Text)
			if !s.Thinking {
				content.WriteString(s.Text)
			}
		}
		if all.String() != in {
			t.Errorf("%s: SplitRaw lost text: %q, want %q", tt.name, all.String(), in)
		}
		if !strings.Contains(tt.name, "stray") && content.String() != Strip(in, o) {
			t.Errorf("%s: SplitRaw content %q, Strip %q", tt.name, content.String(), Strip(in, o))
		}
	}
}
