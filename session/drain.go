package session

import (
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/loop"
)

// Drain makes the scheduler leave: it takes no new turns from here
// (Start, Answer and Continue are refused with an error matching
// ErrDraining and ErrTurnBusy, and queued turns stay queued in the store
// for another node), lets each running turn reach its next round boundary
// and, when the store is a Handoff, hands it over there: its lease ends at
// once and another node's Acquire goes on with it from its committed
// items, nothing recorded as interrupted. A paused turn needs no node and
// is left as it is. When ctx ends first, the turns still in a round are
// handed over as they stand (the node taking them runs their read-only
// calls again and answers the others "aborted: node lost") and Drain says
// how many. On a store that cannot hand over, Drain only waits: the turns
// run to their end. Close the scheduler afterwards.
func (s *Scheduler) Drain(ctx context.Context) error {
	s.draining.Store(true)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.runners() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			n := s.handOverAll()
			return fmt.Errorf("session: drain: %d turns were still in a round and were handed over as they stand: %w", n, ctx.Err())
		case <-tick.C:
		}
	}
}

// Draining reports whether Drain was called.
func (s *Scheduler) Draining() bool { return s.draining.Load() }

// runners counts the threads whose runner goroutine runs.
func (s *Scheduler) runners() int {
	threads := s.loadedThreads()
	n := 0
	for _, th := range threads {
		th.mu.Lock()
		if th.running {
			n++
		}
		th.mu.Unlock()
	}
	return n
}

// handOverAll hands over every turn still running here, mid-round; their
// runs go on here until the scheduler closes, but nothing they write is
// accepted and nothing they emit is published. It returns how many.
func (s *Scheduler) handOverAll() int {
	h, ok := s.c.Store.(Handoff)
	if !ok {
		return 0
	}
	threads := s.loadedThreads()
	n := 0
	for _, th := range threads {
		th.mu.Lock()
		if t := th.active; t != nil && th.running && t.state == nil && !t.gone.Load() {
			t.gone.Store(true)
			if err := s.handOver(h, t.rec.ID); err == nil {
				n++
			}
		}
		th.mu.Unlock()
	}
	return n
}

// yield says, at a round boundary of t, whether the turn leaves this node
// (the scheduler drains and the store can hand it over).
func (s *Scheduler) yield(t *turnRun) bool {
	if !s.draining.Load() {
		return false
	}
	_, ok := s.c.Store.(Handoff)
	return ok || t.gone.Load()
}

// handedOver ends a run the engine left at a round boundary (or that was
// handed over mid-round): the turn's lease is given up so another node
// goes on with it; here the thread forgets it and is read again from the
// store before it is used. th.mu is held.
func (s *Scheduler) handedOver(th *thread, t *turnRun) {
	if h, ok := s.c.Store.(Handoff); ok && !t.gone.Swap(true) {
		if err := s.handOver(h, t.rec.ID); err != nil {
			// The lease runs out by itself within its term; another
			// node takes the turn then.
			s.warn(th, t.rec.ID, fmt.Sprintf("the turn could not be handed over at once (another node takes it when its lease ends): %v", err))
		}
	}
	th.active, th.running, th.stale, th.carry = nil, false, true, nil
	th.notify()
}

// handoverTimeout bounds one hand-over: a store that does not answer
// leaves the turn to its lease, which ends by itself.
const handoverTimeout = 5 * time.Second

// handOver hands a turn over, whatever the scheduler's state.
func (s *Scheduler) handOver(h Handoff, turnID string) error {
	ctx, cancel := context.WithTimeout(s.bg, handoverTimeout)
	defer cancel()
	return h.Handover(ctx, turnID)
}

// yielded reports whether a run's outcome is a hand-over.
func yielded(out *loop.Outcome, t *turnRun) bool {
	return t.gone.Load() || (out != nil && out.StopReason == loop.StopYielded)
}

// loadedThreads is a snapshot of the threads the scheduler holds, to walk
// without holding s.mu.
func (s *Scheduler) loadedThreads() []*thread {
	s.mu.Lock()
	defer s.mu.Unlock()
	threads := make([]*thread, 0, len(s.threads))
	for _, th := range s.threads {
		threads = append(threads, th)
	}
	return threads
}
