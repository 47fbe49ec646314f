package textcall

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/think"
)

// benchInput is a long answer with prose full of '<' and a call block every
// few paragraphs.
var benchInput = func() string {
	var b strings.Builder
	for b.Len() < 64<<10 {
		b.WriteString("<think>Compare a < b with the table.</think>")
		b.WriteString("The bound holds when x<3 and y > 2; see <b>note</b>.\n")
		b.WriteString(exampleA)
		b.WriteString("\n")
	}
	return b.String()
}()

func BenchmarkStream(b *testing.B) {
	const chunk = 16
	o := Options{Catalog: testCatalog, NewID: func() string { return "id" }}
	b.SetBytes(int64(len(benchInput)))
	b.ReportAllocs()
	for b.Loop() {
		th := think.NewFilter(o.Think)
		f := NewFilter(o)
		for i := 0; i < len(benchInput); i += chunk {
			for _, s := range th.Write(benchInput[i:min(len(benchInput), i+chunk)]) {
				if !s.Thinking {
					f.Write(s.Text)
				}
			}
		}
		for _, s := range th.Flush() {
			if !s.Thinking {
				f.Write(s.Text)
			}
		}
		f.Flush()
	}
}

func BenchmarkParse(b *testing.B) {
	o := Options{Catalog: testCatalog, NewID: func() string { return "id" }}
	b.SetBytes(int64(len(benchInput)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(benchInput, o)
	}
}
