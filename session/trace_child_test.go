package session_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/session"
)

// TestASubagentsEventsAreKeptInItsOwnThreadsTrace: the events a subagent
// event carries are kept in the parent's trace as they came and, unwrapped,
// in the trace of the child's thread (and a grandchild's in its own), so
// that rein trace CHILD draws the child's turn.
func TestASubagentsEventsAreKeptInItsOwnThreadsTrace(t *testing.T) {
	wrap := func(thread, turn, call string, depth int, e event.Event) event.Event {
		return event.Event{Type: event.Subagent, ThreadID: thread, TurnID: turn, CallID: call, Depth: depth, Sub: &e}
	}
	child := func(e event.Event) event.Event {
		e.ThreadID, e.TurnID = "th_c", "tu_c"
		return wrap("th_p", "tu_p", "t1", 1, e)
	}
	var k session.TraceKeeper
	k.Handle(event.Event{Type: event.TurnStarted, ThreadID: "th_p", TurnID: "tu_p"})
	k.Handle(child(event.Event{Type: event.TurnStarted}))
	k.Handle(child(event.Event{Type: event.ToolStarted, CallID: "c1"}))
	k.Handle(child(event.Event{Type: event.ToolOutput, CallID: "c1", Delta: "..."}))
	grand := event.Event{Type: event.TurnStarted, ThreadID: "th_g", TurnID: "tu_g"}
	k.Handle(child(wrap("th_c", "tu_c", "t2", 2, grand)))
	k.Handle(child(event.Event{Type: event.TurnCompleted, Status: "completed"}))
	k.Handle(event.Event{Type: event.TurnCompleted, ThreadID: "th_p", TurnID: "tu_p"})

	traces := &traceStore{}
	if err := k.Keep(t.Context(), traces, "th_p"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		thread, turn string
		want         []event.Type
	}{
		{"th_p", "tu_p", []event.Type{event.TurnStarted, event.Subagent, event.Subagent, event.Subagent, event.Subagent, event.Subagent, event.TurnCompleted}},
		{"th_c", "tu_c", []event.Type{event.TurnStarted, event.ToolStarted, event.Subagent, event.TurnCompleted}},
		{"th_g", "tu_g", []event.Type{event.TurnStarted}},
	} {
		var want []string
		for _, w := range tt.want {
			want = append(want, string(w))
		}
		if got := traces.types(tt.thread, tt.turn); !slices.Equal(got, want) {
			t.Errorf("trace of %s: %s, want %s", tt.thread, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
}
