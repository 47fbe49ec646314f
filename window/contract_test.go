package window_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/window"
)

// fakeHistory is a guard.History without an engine: it records what the
// guard asks of it.
type fakeHistory struct {
	req       llm.Request
	turnStart int
	summaries []*llm.Request
	compacted []llm.Item
	keepFrom  int
	warnings  []string
}

func (h *fakeHistory) Request() *llm.Request            { return &h.req }
func (h *fakeHistory) TurnStart() int                   { return h.turnStart }
func (h *fakeHistory) Edited() []int                    { return nil }
func (h *fakeHistory) Shorten(i int, it llm.Item) error { h.req.Items[i] = it; return nil }
func (h *fakeHistory) Warn(msg string)                  { h.warnings = append(h.warnings, msg) }
func (h *fakeHistory) Summarize(_ context.Context, req *llm.Request) (string, error) {
	h.summaries = append(h.summaries, req)
	return "the summary", nil
}
func (h *fakeHistory) Compact(summary llm.Item, keepFrom int) error {
	h.compacted = append(h.compacted, summary)
	h.keepFrom = keepFrom
	h.req.Items = append([]llm.Item{summary}, h.req.Items[keepFrom:]...)
	return nil
}

// TestGuardNeedsOnlyTheContract drives a Window's guard through the
// guard.History contract alone, no engine: a forced fit asks for one
// summary and compacts with the user's messages quoted.
func TestGuardNeedsOnlyTheContract(t *testing.T) {
	w, err := window.New(window.Config{Model: "gpt-4o", Window: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHistory{turnStart: 2, req: llm.Request{Items: []llm.Item{
		llm.UserText("first question"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "first answer"}}},
		llm.UserText("second question"),
	}}}
	var g guard.Guard = w.Guard()
	if err := g.Fit(context.Background(), h, true); err != nil {
		t.Fatal(err)
	}
	if len(h.summaries) != 1 || len(h.compacted) != 1 || h.keepFrom != 3 {
		t.Fatalf("%d summaries, %d compactions keeping from %d; want 1, 1, 3", len(h.summaries), len(h.compacted), h.keepFrom)
	}
	last := h.summaries[0].Items[len(h.summaries[0].Items)-1]
	if last.Origin != llm.OriginDirective || !strings.Contains(last.Text(), "handoff summary") {
		t.Errorf("the summary request ends with %+v, want the summary prompt", last)
	}
	text := h.compacted[0].Text()
	for _, want := range []string{"the summary", "first question", "second question"} {
		if !strings.Contains(text, want) {
			t.Errorf("the compaction lacks %q: %q", want, text)
		}
	}
	if len(h.warnings) != 1 || !strings.Contains(h.warnings[0], "compacted the history") {
		t.Errorf("warnings %q", h.warnings)
	}
}
