package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

func TestTheTerminalShowsASubagentIndentedByDepth(t *testing.T) {
	var buf bytes.Buffer
	h := newHuman(&buf, false)
	now := time.Now()
	wrap := func(depth int, e event.Event) event.Event {
		return event.Event{Type: event.Subagent, Time: now, CallID: "t1", Depth: depth, Sub: &e}
	}
	h.Handle(wrap(1, event.Event{Type: event.ToolStarted, Time: now, Name: "grep", Args: `{"pattern":"x"}`}))
	h.Handle(wrap(1, wrap(2, event.Event{Type: event.Result, Time: now, Name: "read_file", Status: "ok", Content: "text"})))
	h.Handle(wrap(1, event.Event{Type: event.TurnCompleted, Time: now, ThreadID: "thread_child", Turn: &event.TurnSummary{Status: "completed", Rounds: 2, Usage: llm.Usage{InputTokens: 30, OutputTokens: 12}}}))
	h.Handle(wrap(1, event.Event{Type: event.TextDelta, Delta: "not shown"}))
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], "  │ ▸ grep") || !strings.HasPrefix(lines[1], "  │   │ ✓ read_file") ||
		!strings.Contains(lines[2], "sub-agent completed · 2 rounds · 42 tokens · thread_child") {
		t.Errorf("rendered:\n%s", buf.String())
	}
}
