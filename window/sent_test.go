package window

import (
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// TestReportSentTakesThePromptFromTheLastRequest: a stored thread's report
// counts the system prompt and the tools as the last request sent them,
// and its history here; the segments still add up.
func TestReportSentTakesThePromptFromTheLastRequest(t *testing.T) {
	w, err := New(Config{Model: "gpt-5", Window: 10_000, MaxOutput: 1_000})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Items: []llm.Item{llm.UserText("hello there, how are you today?")}}
	plain := w.Report(req)
	sent := &event.ContextReport{Segments: []event.ContextSegment{
		{Name: "system", Tokens: 1_200}, {Name: "memory", Tokens: 30}, {Name: "tools", Tokens: 2_400},
		{Name: "history", Tokens: 99_999}, {Name: "reserve", Tokens: 77}, // not the prompt's: ignored
	}}
	r := w.ReportSent(req, sent)
	seg := func(r *event.ContextReport, s Segment) int { return r.Segments[s].Tokens }
	if seg(plain, System) != 0 || seg(plain, Tools) != 0 {
		t.Fatalf("the plain report counts a prompt it was not given: %v", plain.Segments)
	}
	if seg(r, System) != 1_200 || seg(r, Memory) != 30 || seg(r, Tools) != 2_400 {
		t.Errorf("prompt segments %v, want system 1200, memory 30, tools 2400", r.Segments)
	}
	if seg(r, History) != seg(plain, History) || r.Reserve != 1_000 {
		t.Errorf("history %d reserve %d, want %d counted here and 1000", seg(r, History), r.Reserve, seg(plain, History))
	}
	if r.Input != plain.Input+3_630 || sum(r) != r.Total {
		t.Errorf("input %d (plain %d), segments add up to %d of %d", r.Input, plain.Input, sum(r), r.Total)
	}
	if got := w.ReportSent(req, nil); got.Input != plain.Input {
		t.Errorf("without a sent report: input %d, want Report's %d", got.Input, plain.Input)
	}
}
