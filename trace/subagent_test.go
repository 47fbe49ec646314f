package trace_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/trace"
)

// subagentEvents is a parent turn whose round 1 calls task; the child's
// events come carried in subagent events, as the engine emits them, and
// are read back through JSON, as rein trace reads a stored trace.
func subagentEvents(t *testing.T) []event.Event {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := func(e event.Event) event.Event { e.ThreadID, e.TurnID = "th", "turn_p"; return e }
	child := func(ms int, e event.Event) event.Event {
		e.ThreadID, e.TurnID, e.Time = "thread_c", "turn_c", at(ms)
		return p(event.Event{Type: event.Subagent, Time: at(ms), CallID: "t1", Depth: 1, Sub: &e})
	}
	cu := llm.Usage{InputTokens: 300, OutputTokens: 100}
	evs := []event.Event{
		p(event.Event{Type: event.TurnStarted, Time: at(0)}),
		p(event.Event{Type: event.RoundStarted, Time: at(0), Round: 1}),
		p(event.Event{Type: event.CallCompleted, Time: at(10), CallID: "t1", Name: "task", Args: `{"prompt":"x"}`}),
		p(event.Event{Type: event.ToolStarted, Time: at(10), CallID: "t1", Name: "task"}),
		child(11, event.Event{Type: event.TurnStarted}),
		child(11, event.Event{Type: event.RoundStarted, Round: 1}),
		child(20, event.Event{Type: event.ToolStarted, CallID: "c1", Name: "grep"}),
		child(30, event.Event{Type: event.Result, CallID: "c1", Name: "grep", Status: "ok", Content: "found"}),
		child(31, event.Event{Type: event.Usage, Round: 1, Usage: &llm.Usage{InputTokens: 100, OutputTokens: 50}}),
		child(31, event.Event{Type: event.RoundStarted, Round: 2}),
		child(40, event.Event{Type: event.Usage, Round: 2, Usage: &cu}),
		child(40, event.Event{Type: event.TurnCompleted, Status: "completed", Code: "finished", Turn: &event.TurnSummary{Status: "completed", Answer: "the answer", Usage: cu}}),
		p(event.Event{Type: event.Result, Time: at(41), CallID: "t1", Name: "task", Status: "ok", Content: "the answer"}),
		p(event.Event{Type: event.Usage, Time: at(41), Round: 1, Usage: &llm.Usage{InputTokens: 310, OutputTokens: 105}}),
		p(event.Event{Type: event.TurnCompleted, Time: at(50), Status: "completed", Turn: &event.TurnSummary{Status: "completed"}}),
	}
	var buf bytes.Buffer
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	out, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestASubagentsTurnIsNestedUnderItsCall(t *testing.T) {
	turns := trace.Turns(subagentEvents(t))
	if len(turns) != 1 {
		t.Fatalf("%d turns, want the parent's only (the child's is nested)", len(turns))
	}
	r := turns[0].Rounds
	if len(r) != 1 || len(r[0].Calls) != 1 {
		t.Fatalf("rounds %+v", r)
	}
	c := r[0].Calls[0]
	if len(c.Subagents) != 1 {
		t.Fatalf("call %s has %d sub-agent turns", c.ID, len(c.Subagents))
	}
	ch := c.Subagents[0]
	if ch.ThreadID != "thread_c" || ch.ID != "turn_c" || !ch.Done || ch.Answer != "the answer" || len(ch.Rounds) != 2 {
		t.Errorf("child turn %+v", ch)
	}
	if ch.Usage.Total() != 400 || ch.Rounds[0].Usage.Total() != 150 || len(ch.Rounds[0].Calls) != 1 || ch.Rounds[0].Calls[0].Name != "grep" {
		t.Errorf("child usage %d, round 1 %d tokens, calls %+v", ch.Usage.Total(), ch.Rounds[0].Usage.Total(), ch.Rounds[0].Calls)
	}
	var page bytes.Buffer
	if err := trace.WriteHTML(&page, turns[0]); err != nil {
		t.Fatal(err)
	}
	if s := page.String(); !strings.Contains(s, "sub-agent · thread thread_c") || !strings.Contains(s, "400 tokens") {
		t.Errorf("the page does not show the sub-agent with its tokens")
	}
	if s := page.String(); !strings.Contains(s, "rein trace thread_c") {
		t.Errorf("the page does not link the sub-agent's own trace")
	}
}
