package tui

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

// TestTheChatShowsASubagentIndentedUnderItsCall: a sub-agent's tools,
// results and end (its rounds, tokens and thread id, for /trace) show in the transcript, nested
// by depth; its streamed text does not.
func TestTheChatShowsASubagentIndentedUnderItsCall(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	child := func(e event.Event, depth int) event.Event {
		return event.Event{Type: event.Subagent, TurnID: "turn_1", CallID: "call_task", Depth: depth, Sub: &e}
	}
	c.send(
		child(event.Event{Type: event.ToolStarted, Name: "grep", Args: `{"pattern":"TODO"}`}, 1),
		child(event.Event{Type: event.TextDelta, Delta: "child thinking aloud"}, 1),
		child(event.Event{Type: event.Result, Name: "grep", Status: "ok", Content: "a.go:3: TODO"}, 1),
		// A grandchild's event arrives wrapped in its parent's.
		child(event.Event{Type: event.Subagent, Depth: 2, Sub: &event.Event{Type: event.Result, Name: "read_file", Status: "error", Content: "no such file"}}, 1),
		child(event.Event{Type: event.TurnCompleted, ThreadID: "thread_child", Turn: &event.TurnSummary{Status: record.StatusCompleted, Rounds: 2, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}}}, 1),
	)
	tr := c.transcript()
	for _, want := range []string{"  │ ▸ grep", "  │ ✓ grep: a.go:3: TODO", "  │   │ ✗ read_file: no such file", "  │ sub-agent completed · 2 rounds · 120 tokens · thread_child"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
	if strings.Contains(tr, "child thinking aloud") {
		t.Errorf("the child's streamed text is in the transcript:\n%s", tr)
	}
}
