package session

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/event"
)

// DefaultSubscriberBuffer is how many events a subscriber may fall behind
// before events are dropped for it.
const DefaultSubscriberBuffer = 1024

// WarnEventsDropped is the warning code of the event a subscriber receives
// after events were dropped because it read too slowly; Extra["dropped"]
// holds how many.
const WarnEventsDropped = "events_dropped"

// Subscription is one subscriber's view of a thread's events. Events are
// delivered in order into a bounded buffer; a subscriber that falls behind
// loses events rather than slowing the turn, and is told how many it lost
// by a warning event (code WarnEventsDropped) once it catches up.
type Subscription struct {
	hub     *hub
	ch      chan event.Event
	gap     int // events dropped since the last delivered one; under hub.mu
	dropped atomic.Int64
	closed  bool // under hub.mu
}

// Events returns the channel of events. It is closed when the subscription
// or the scheduler is closed.
func (s *Subscription) Events() <-chan event.Event { return s.ch }

// Dropped returns how many events this subscriber has lost so far.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription and closes its channel. It is safe to call
// more than once.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.remove(s)
}

// hub fans one thread's events out to its subscribers. Publishing never
// blocks: every send is non-blocking, under one lock so that events keep
// their order and no send races a close.
type hub struct {
	mu   sync.Mutex
	subs []*Subscription
	done bool
}

func (h *hub) subscribe(buffer int) (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil, ErrClosed
	}
	// One slot is kept for the warning that reports a gap.
	s := &Subscription{hub: h, ch: make(chan event.Event, buffer+1)}
	h.subs = append(h.subs, s)
	return s, nil
}

// remove closes s; h.mu is held.
func (h *hub) remove(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.ch)
	for i, x := range h.subs {
		if x == s {
			h.subs = append(h.subs[:i], h.subs[i+1:]...)
			break
		}
	}
}

// Handle implements event.Handler: it publishes e to every subscriber.
func (h *hub) Handle(e event.Event) {
	e = detach(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		// A normal event leaves one slot free, so that a gap can always be
		// reported before the next event that fits.
		if cap(s.ch)-len(s.ch) < 2 {
			s.gap++
			s.dropped.Add(1)
			continue
		}
		if s.gap > 0 {
			s.ch <- event.Event{
				Type: event.Warning, Time: e.Time, ThreadID: e.ThreadID, TurnID: e.TurnID, Code: WarnEventsDropped,
				Content: fmt.Sprintf("%d events were dropped because the subscriber read too slowly", s.gap),
				Extra:   map[string]any{"dropped": s.gap},
			}
			s.gap = 0
		}
		s.ch <- e
	}
}

// close ends every subscription.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for len(h.subs) > 0 {
		h.remove(h.subs[0])
	}
}

// detach copies what an event points to that the engine may change after
// the event was handled (a history slot replaced by a pause's answer), so
// subscribers on other goroutines read a stable copy.
func detach(e event.Event) event.Event {
	if e.Item != nil {
		it := *e.Item
		e.Item = &it
	}
	if e.Usage != nil {
		u := *e.Usage
		e.Usage = &u
	}
	if e.Pause != nil {
		p := *e.Pause
		e.Pause = &p
	}
	if e.Context != nil {
		c := *e.Context
		e.Context = &c
	}
	if e.Turn != nil {
		t := *e.Turn
		e.Turn = &t
	}
	return e
}
