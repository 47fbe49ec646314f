package session

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// TestARecycledTraceRoomComesBackEmpty: a keeper's room given back (full
// of events pointing to items) is handed out again empty and zeroed, so a
// room in the pool keeps nothing alive; a slice of another size is not
// taken.
func TestARecycledTraceRoomComesBackEmpty(t *testing.T) {
	for range 8 {
		r := newTraceRoom()
		if len(r) != 0 || cap(r) != traceRoom {
			t.Fatalf("a room has length %d, room %d; want 0 and %d", len(r), cap(r), traceRoom)
		}
		for _, e := range r[:traceRoom] {
			if e.Type != "" || e.Item != nil || e.Turn != nil {
				t.Fatalf("a room handed out holds an event: %+v", e)
			}
		}
		for i := range traceRoom {
			r = append(r, event.Event{Type: event.ItemAdded, Item: &llm.Item{ID: fmt.Sprint(i)}, Turn: &event.TurnSummary{}})
		}
		RecycleTraceEvents(r)
	}
	odd := make([]event.Event, 1, traceRoom+1)
	odd[0].Type = event.TurnStarted
	RecycleTraceEvents(odd)
	if odd[0].Type != event.TurnStarted {
		t.Fatal("a slice of another size was taken (and cleared)")
	}
}
