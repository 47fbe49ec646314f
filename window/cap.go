package window

import (
	"fmt"

	"github.com/reinhq/rein/llm"
)

// sampleBytes is how much of each end of a long result is tokenized to
// learn its bytes per token: counting a megabyte exactly takes longer than
// a round should.
const sampleBytes = 8 << 10

// Cap returns a tool result shortened to about Config.ResultCap tokens to
// be recorded (guard.Window, DESIGN §8): the head and the tail are kept and a
// marker between says how much was cut and how to see it.
func (w *Window) Cap(res llm.Result) llm.Result {
	limit := w.c.ResultCap
	// A token is at least a byte: text no longer than the cap fits.
	if limit <= 0 || len(res.Content) <= limit {
		return res
	}
	s := res.Content
	tokens := w.sampledCount(s)
	if tokens <= limit {
		return res
	}
	name := res.Name
	if name == "" {
		name = "the tool"
	}
	res.Content = cutMiddle(s, tokens, limit, func(cut, lines int) string {
		return fmt.Sprintf("\n\n[rein: about %d tokens (%d lines) were cut from the middle of this output to keep the context small. "+
			"Call %s again with narrower arguments (a line range, a pattern, a limit) to see the part you need.]\n\n", cut, lines, name)
	})
	return res
}

// sampledCount returns the tokens of s: counted when s is short, else
// estimated from the bytes per token of its two ends.
func (w *Window) sampledCount(s string) int {
	if len(s) <= 4*sampleBytes {
		return w.k.text(s)
	}
	head := s[:lineEnd(s, sampleBytes)]
	tail := s[lineStart(s, len(s)-sampleBytes):]
	n := w.k.c.Count(head) + w.k.c.Count(tail)
	if n == 0 {
		return 0
	}
	return int(float64(len(s)) * float64(n) / float64(len(head)+len(tail)))
}
