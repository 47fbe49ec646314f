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
