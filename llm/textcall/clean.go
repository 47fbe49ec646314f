package textcall

import (
	"strings"

	"github.com/reinhq/rein/llm/think"
)

// Clean returns a complete response whose calls were read (by [Parse] or a
// [Filter]) as history keeps it (DESIGN §5.2): without its call markup, but
// with its inline reasoning as the model wrote it, tags and all, as a round
// of native calls keeps it. Each run of content between reasoning is
// cleaned as Parse cleans it; markup inside a <think> block is reasoning
// and stays.
func Clean(text string, o Options) string {
	if !o.Think.StartInside && strings.IndexByte(text, '<') < 0 {
		visible, _ := Parse(text, o)
		return visible
	}
	// The calls were read already: ids are not needed again.
	o.NewID = func() string { return "" }
	var b strings.Builder
	for _, s := range think.SplitRaw(text, o.Think) {
		if s.Thinking {
			b.WriteString(s.Text)
			continue
		}
		f := NewFilter(o)
		t, _ := f.Write(s.Text)
		b.WriteString(t)
		t, _ = f.Flush()
		b.WriteString(t)
	}
	return b.String()
}
