package session

import (
	"context"
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
// queued in order, up to the scheduler's SubscriberBuffer; a subscriber that
// falls behind loses events rather than slowing the turn, and is told how
// many it lost by a warning event (code WarnEventsDropped) before the next
// event that is queued.
//
// The queue grows with the events actually waiting and is handed to the
// reader whole, so an idle subscription holds no buffer: a server watching
// thousands of idle threads pays for none of them.
type Subscription struct {
	hub   *hub
	limit int
	ready func() // see Scheduler.SubscribeFunc; nil for Subscribe

	mu     sync.Mutex
	q      []event.Event
	gap    int           // events dropped since the last queued one
	closed bool          // no more events will be queued
	wake   chan struct{} // closed to wake a blocked Next; nil when none waits

	dropped atomic.Int64
}

// Next waits until events are queued and returns all of them, in order.
// Once the subscription is closed and every queued event was returned, it
// returns ErrClosed; when ctx is done first, ctx.Err().
func (s *Subscription) Next(ctx context.Context) ([]event.Event, error) {
	for {
		evs, wake, err := s.take(true)
		if evs != nil || err != nil {
			return evs, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

// Poll returns the events queued now, in order, without waiting: none
// (and a nil error) when nothing is queued. Once the subscription is closed
// and every queued event was returned, it returns ErrClosed.
func (s *Subscription) Poll() ([]event.Event, error) {
	evs, _, err := s.take(false)
	return evs, err
}

// take hands over the queue. When it is empty and the subscription is
// open, wait asks for a channel that is closed once events are queued or
// the subscription closes.
func (s *Subscription) take(wait bool) (evs []event.Event, wake <-chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) > 0 {
		// The reader owns the slice from now on; the next event starts a
		// new one, so memory follows what is queued, not what once was.
		evs, s.q = s.q, nil
		return evs, nil, nil
	}
	if s.closed {
		return nil, nil, ErrClosed
	}
	if !wait {
		return nil, nil, nil
	}
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return nil, s.wake, nil
}

// Pending returns how many events are queued and not yet taken.
func (s *Subscription) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q)
}

// Dropped returns how many events this subscriber has lost so far.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription: no more events are queued, and Next and Poll
// return ErrClosed once the events already queued were taken. It is safe to
// call more than once.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.remove(s)
}

// push queues e, or counts it as dropped when the subscriber is too far
// behind. It never blocks on the reader: the lock it takes is held by
// readers only to swap the queue out.
func (s *Subscription) push(e event.Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	// A normal event leaves one place free, so that a gap can always be
	// reported before the next event that fits.
	if len(s.q) >= s.limit {
		s.gap++
		s.dropped.Add(1)
		s.mu.Unlock()
		return
	}
	first := len(s.q) == 0
	if s.gap > 0 {
		s.q = append(s.q, event.Event{
			Type: event.Warning, Time: e.Time, ThreadID: e.ThreadID, TurnID: e.TurnID, Code: WarnEventsDropped,
			Content: fmt.Sprintf("%d events were dropped because the subscriber read too slowly", s.gap),
			Extra:   map[string]any{"dropped": s.gap},
		})
		s.gap = 0
	}
	s.q = append(s.q, e)
	wake := s.wake
	s.wake = nil
	s.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	if first && s.ready != nil {
		s.ready()
	}
}

// end marks s closed and wakes its reader; h.mu is held.
func (s *Subscription) end() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	wake := s.wake
	s.wake = nil
	s.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	if s.ready != nil {
		s.ready()
	}
}

// hub fans one thread's events out to its subscribers. Publishing never
// blocks: events are appended to each subscriber's queue under one lock,
// so that they keep their order and none is queued after a close.
type hub struct {
	mu   sync.Mutex
	subs []*Subscription
	done bool
	// n is len(subs), written under mu: a publish with no subscriber
	// (a library turn's every event) takes no lock.
	n atomic.Int32
}

func (h *hub) subscribe(buffer int, ready func()) (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil, ErrClosed
	}
	s := &Subscription{hub: h, limit: buffer, ready: ready}
	h.subs = append(h.subs, s)
	h.n.Store(int32(len(h.subs)))
	return s, nil
}

// remove closes s; h.mu is held.
func (h *hub) remove(s *Subscription) {
	for i, x := range h.subs {
		if x == s {
			h.subs = append(h.subs[:i], h.subs[i+1:]...)
			h.n.Store(int32(len(h.subs)))
			break
		}
	}
	s.end()
}

// Handle implements event.Handler: it publishes e to every subscriber.
func (h *hub) Handle(e event.Event) { h.publish(&e) }

// publish is Handle of *e, which it does not keep. With no subscriber
// (a library turn, a one-shot run) it copies nothing, and its frame stays
// small (a tool's call publishes from a small stack: see fanout).
func (h *hub) publish(e *event.Event) {
	if h.n.Load() == 0 {
		// No subscriber now: one that subscribes while this runs
		// subscribed after the event, as if it had waited for the lock.
		return
	}
	h.mu.Lock()
	if len(h.subs) > 0 {
		h.pushAll(e)
	}
	h.mu.Unlock()
}

// pushAll queues a copy of *e for every subscriber; h.mu is held.
//
//go:noinline
func (h *hub) pushAll(e *event.Event) {
	c := detach(*e)
	for _, s := range h.subs {
		s.push(c)
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
