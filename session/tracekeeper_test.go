package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// TestTraceKeeperKeepsEachEventAsItsJSON: what a keeper hands the store is
// each event's own JSON encoding, as json.Marshal writes it (no newline,
// HTML escaped), deltas left out; and a second run kept by the same keeper
// leaves the events the store already holds as they were.
func TestTraceKeeperKeepsEachEventAsItsJSON(t *testing.T) {
	at := time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	item := llm.UserText("<b>hello</b> & more")
	runs := [][]event.Event{
		{
			{Type: event.TurnStarted, Time: at, ThreadID: "th", TurnID: "t1"},
			{Type: event.TextDelta, Delta: "left out"},
			{Type: event.ItemAdded, Time: at, TurnID: "t1", Item: &item},
			{Type: event.Warning, Time: at, TurnID: "t1", Content: "a\nb", Extra: map[string]any{"n": 1}},
		},
		{
			{Type: event.TurnStarted, Time: at.Add(time.Second), ThreadID: "th", TurnID: "t2"},
			{Type: event.TurnCompleted, Time: at.Add(2 * time.Second), TurnID: "t2", Status: "completed"},
		},
	}
	st := &traceStore{}
	var k session.TraceKeeper
	var kept [][]byte // copies of what the store was given, run by run
	for _, run := range runs {
		for _, e := range run {
			k.Handle(e)
		}
		if err := k.Keep(context.Background(), st, "th"); err != nil {
			t.Fatal(err)
		}
		for _, raw := range st.events["th/"+run[0].TurnID] {
			kept = append(kept, bytes.Clone(raw))
		}
	}
	var want [][]byte
	for _, run := range runs {
		for _, e := range run {
			if e.Type == event.TextDelta {
				continue
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, b)
		}
	}
	if len(kept) != len(want) {
		t.Fatalf("%d events kept, want %d", len(kept), len(want))
	}
	for i := range want {
		if !bytes.Equal(kept[i], want[i]) {
			t.Errorf("event %d kept as %s, want %s", i, kept[i], want[i])
		}
	}
	// The first run's events, as the store holds them now.
	for i, raw := range st.events["th/t1"] {
		if !bytes.Equal(raw, want[i]) {
			t.Errorf("the first run's event %d became %s", i, raw)
		}
	}
}

// eventTraceStore is an EventTraceStore in memory: it keeps what it is
// given, by thread, and counts what came encoded.
type eventTraceStore struct {
	events  map[string][]event.Event
	encoded int
}

func (s *eventTraceStore) AppendTrace(_ context.Context, _, _ string, events []json.RawMessage) error {
	s.encoded += len(events)
	return nil
}

func (s *eventTraceStore) AppendTraceEvents(_ context.Context, thread, _ string, events []event.Event) error {
	if s.events == nil {
		s.events = make(map[string][]event.Event)
	}
	s.events[thread] = append(s.events[thread], events...)
	return nil
}

// TestTraceKeeperHandsAnEventStoreCopiesOfTheEvents: a store that takes
// events is given them unencoded (the run spends nothing on JSON), the
// sub-agent's unwrapped in its own thread's trace, and each reads, once
// encoded, as it was when it was handled — though the engine replaced the
// history slot its item pointed to (a pause's placeholder answered) and
// changed the usage and the extra fields after.
func TestTraceKeeperHandsAnEventStoreCopiesOfTheEvents(t *testing.T) {
	at := time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	history := []llm.Item{llm.ToolResult(llm.Result{CallID: "q1", Name: "ask_user", Status: llm.ResultPending})}
	usage := llm.Usage{InputTokens: 10}
	extra := map[string]any{"n": 1}
	childItem := llm.UserText("child <input>")
	events := []event.Event{
		{Type: event.TurnStarted, Time: at, ThreadID: "th", TurnID: "t1"},
		{Type: event.ItemAdded, Time: at, TurnID: "t1", Item: &history[0]},
		{Type: event.ThinkingDelta, Delta: "left out"},
		{Type: event.Usage, Time: at, TurnID: "t1", Usage: &usage, Extra: extra},
		{Type: event.Subagent, Time: at, ThreadID: "th", TurnID: "t1", CallID: "c9", Depth: 1,
			Sub: &event.Event{Type: event.ItemAdded, Time: at, ThreadID: "th_c", TurnID: "tc", Item: &childItem}},
	}
	var want [][]byte
	for _, e := range events {
		if e.Type == event.ThinkingDelta {
			continue
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
	}
	wantChild, err := json.Marshal(*events[4].Sub)
	if err != nil {
		t.Fatal(err)
	}
	var k session.TraceKeeper
	for _, e := range events {
		k.Handle(e)
	}
	// What the engine does after: the placeholder's slot answered, the
	// usage counted on, and what else the events pointed to changed.
	history[0] = llm.ToolResult(llm.Result{CallID: "q1", Name: "ask_user", Content: "Florence", Status: llm.ResultOK})
	usage.InputTokens = 99
	extra["n"] = 2
	childItem.Parts[0].Text = "changed"

	st := &eventTraceStore{}
	if err := k.Keep(context.Background(), st, "th"); err != nil {
		t.Fatal(err)
	}
	if st.encoded != 0 {
		t.Errorf("%d events were encoded for a store that takes events", st.encoded)
	}
	got := session.EncodeTrace(st.events["th"])
	if len(got) != len(want) {
		t.Fatalf("%d events kept, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("event %d reads %s, want %s", i, got[i], want[i])
		}
	}
	child := session.EncodeTrace(st.events["th_c"])
	if len(child) != 1 || !bytes.Equal(child[0], wantChild) {
		t.Errorf("the child's trace reads %s, want %s", child, wantChild)
	}
}
