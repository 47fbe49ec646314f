package session

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
)

// text is the n-th event of a test stream.
func text(n int) event.Event {
	return event.Event{Type: event.TextDelta, Index: n}
}

// indexes returns the Index of each event, -1 for the drop warning.
func indexes(evs []event.Event) []int {
	var out []int
	for _, e := range evs {
		if e.Code == WarnEventsDropped {
			out = append(out, -1)
			continue
		}
		out = append(out, e.Index)
	}
	return out
}

func TestSubscriptionQueue(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		publish []int // events published before the first read; -1 reads in between
		want    [][]int
		dropped int64
	}{
		{name: "events come in order, all that wait at once", limit: 8, publish: []int{0, 1, 2}, want: [][]int{{0, 1, 2}}},
		{name: "each read takes what was queued since the last", limit: 8, publish: []int{0, 1, -1, 2}, want: [][]int{{0, 1}, {2}}},
		{name: "events past the bound are dropped", limit: 2, publish: []int{0, 1, 2, 3}, want: [][]int{{0, 1}}, dropped: 2},
		{name: "the next event after a gap comes after a warning with the count", limit: 2, publish: []int{0, 1, 2, 3, -1, 4}, want: [][]int{{0, 1}, {-1, 4}}, dropped: 2},
		{name: "the warning may take the place kept for it", limit: 1, publish: []int{0, 1, -1, 2, 3}, want: [][]int{{0}, {-1, 2}}, dropped: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hub
			s, err := h.subscribe(tt.limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]int
			read := func() {
				evs, err := s.Poll()
				if err != nil {
					t.Fatal(err)
				}
				if evs != nil {
					got = append(got, indexes(evs))
				}
			}
			for _, n := range tt.publish {
				if n < 0 {
					read()
					continue
				}
				h.Handle(text(n))
			}
			read()
			if !equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
			if s.Dropped() != tt.dropped {
				t.Errorf("dropped %d, want %d", s.Dropped(), tt.dropped)
			}
			if s.Pending() != 0 || s.q != nil {
				t.Errorf("%d events (capacity %d) still held after every read", s.Pending(), cap(s.q))
			}
		})
	}
}

func TestSubscriptionDropWarningCount(t *testing.T) {
	var h hub
	s, _ := h.subscribe(1, nil)
	for n := range 5 {
		h.Handle(text(n))
	}
	s.Poll()
	h.Handle(text(5))
	evs, _ := s.Poll()
	if len(evs) != 2 || evs[0].Type != event.Warning || evs[0].Extra["dropped"] != 4 {
		t.Fatalf("events %+v, want the warning for 4 dropped events first", evs)
	}
}

func TestSubscriptionNext(t *testing.T) {
	t.Run("waits for the next event", func(t *testing.T) {
		var h hub
		s, _ := h.subscribe(8, nil)
		go func() {
			time.Sleep(10 * time.Millisecond)
			h.Handle(text(7))
		}()
		evs, err := s.Next(t.Context())
		if err != nil || !equal([][]int{indexes(evs)}, [][]int{{7}}) {
			t.Fatalf("Next = %v, %v; want event 7", indexes(evs), err)
		}
	})
	t.Run("returns when ctx is done", func(t *testing.T) {
		var h hub
		s, _ := h.subscribe(8, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		if _, err := s.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Next = %v, want the deadline", err)
		}
	})
	t.Run("a close wakes a waiting reader", func(t *testing.T) {
		var h hub
		s, _ := h.subscribe(8, nil)
		go func() {
			time.Sleep(10 * time.Millisecond)
			s.Close()
		}()
		if _, err := s.Next(t.Context()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next = %v, want ErrClosed", err)
		}
	})
	t.Run("events queued before a close are still delivered", func(t *testing.T) {
		var h hub
		s, _ := h.subscribe(8, nil)
		h.Handle(text(1))
		h.close()
		h.Handle(text(2))
		evs, err := s.Next(t.Context())
		if err != nil || !equal([][]int{indexes(evs)}, [][]int{{1}}) {
			t.Fatalf("Next = %v, %v; want event 1", indexes(evs), err)
		}
		if _, err := s.Next(t.Context()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next after the last event = %v, want ErrClosed", err)
		}
		if _, err := h.subscribe(8, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("subscribe to a closed hub: %v, want ErrClosed", err)
		}
	})
}

func TestSubscriptionReady(t *testing.T) {
	var h hub
	calls := 0
	s, _ := h.subscribe(8, func() { calls++ })
	h.Handle(text(0))
	h.Handle(text(1))
	if calls != 1 {
		t.Fatalf("ready called %d times for two events queued at once, want 1", calls)
	}
	s.Poll()
	h.Handle(text(2))
	if calls != 2 {
		t.Fatalf("ready called %d times, want again once the queue was taken", calls)
	}
	s.Close()
	s.Close()
	if calls != 3 {
		t.Fatalf("ready called %d times, want once more for the close", calls)
	}
}

// TestIdleSubscriptionHoldsNoBuffer: what a subscription costs before any
// event is queued does not depend on the bound (a server holds one per
// watched thread, most of them idle).
func TestIdleSubscriptionHoldsNoBuffer(t *testing.T) {
	const n = 1000
	var h hub
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := h.subscribe(DefaultSubscriberBuffer, nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 1024 {
		t.Errorf("an idle subscription allocates %d bytes, want under 1 KB", per)
	}
	h.close()
}

func equal(a, b [][]int) bool { return slices.EqualFunc(a, b, slices.Equal[[]int]) }
