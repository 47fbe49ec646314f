package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

// TestSubagentEventsBecomeNotifications: a sub-agent's tool calls and end
// reach a client as subagent/event under the parent's call, with the
// child's own ids, depth, tokens and cost; its rounds do not; every one
// sent matches the schema.
func TestSubagentEventsBecomeNotifications(t *testing.T) {
	var seen []msg
	send := func(method string, params any) {
		b, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, msg{Method: method, Params: b})
	}
	wrap := func(depth int, e event.Event) event.Event {
		e.ThreadID, e.TurnID = "thread_c", "turn_c"
		return event.Event{Type: event.Subagent, ThreadID: "th", TurnID: "turn_p", CallID: "t1", Depth: depth, Sub: &e}
	}
	h := server.NotifierForTest(send)
	h(wrap(1, event.Event{Type: event.TurnStarted}))
	h(wrap(1, event.Event{Type: event.RoundStarted, Round: 1}))
	h(wrap(1, event.Event{Type: event.ToolStarted, CallID: "c1", Name: "grep"}))
	h(wrap(1, event.Event{Type: event.Result, CallID: "c1", Name: "grep", Status: "ok", Content: strings.Repeat("x", 5000)}))
	h(wrap(1, event.Event{Type: event.TurnCompleted, Status: "completed", Turn: &event.TurnSummary{Status: "completed", Answer: "done", Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}, Cost: 0.5}}))
	if len(seen) != 4 {
		t.Fatalf("%d notifications, want 4 (the round is not one): %+v", len(seen), seen)
	}
	var last, result protocol.SubagentEvent
	json.Unmarshal(seen[3].Params, &last)
	json.Unmarshal(seen[2].Params, &result)
	if seen[3].Method != protocol.NotifySubagent || last.CallID != "t1" || last.Depth != 1 || last.ChildThreadID != "thread_c" || last.TurnID != "turn_p" ||
		last.Type != "turn_completed" || last.Content != "done" || last.Usage == nil || last.Usage.InputTokens != 7 || last.Cost != 0.5 {
		t.Errorf("turn_completed as %s %+v", seen[3].Method, last)
	}
	if n := len([]rune(result.Content)); n > 2001 {
		t.Errorf("a result's content of %d characters was sent whole", n)
	}
	checkNotifications(t, seen)
}
