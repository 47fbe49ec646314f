package window

import (
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// ReportSent is Report for a stored thread, whose system prompt and tool
// definitions are not kept with its items: the prompt's segments (system,
// instructions, memory, knowledge, skills, tools) are those of sent, the
// report of the last request the thread made (its Context event, kept in
// the thread's trace), and the history is counted here. With sent nil it is
// Report.
func (w *Window) ReportSent(req *llm.Request, sent *event.ContextReport) *event.ContextReport {
	if sent == nil {
		return w.Report(req)
	}
	g := w.newGuard()
	segs, _ := g.count(req, nil)
	for _, s := range sent.Segments {
		for i := System; i < History; i++ {
			if s.Name == i.String() {
				segs[i] = max(s.Tokens, 0)
			}
		}
	}
	input := 0
	for s := range inputSegments {
		input += segs[s]
	}
	return w.report(segs, input, g.reserve(req), sourceEstimate)
}
