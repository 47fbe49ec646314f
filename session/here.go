package session

import (
	"context"

	"github.com/reinhq/rein/llm"
)

// A caller that starts a turn and waits for it (RunTurn) runs it on its own
// goroutine: the turn is claimed as Start claims it and run as a thread's
// driver runs it, without the hand-off to a new goroutine and back.

// runTurn starts a turn of input (asking for output, if not nil) and waits
// for its end or pause, running it here when it starts at once. An error
// with a Turn that has no ID is the start's: no turn began.
func (s *Scheduler) runTurn(ctx context.Context, threadID string, input []llm.Item, output *llm.Output) (Turn, error) {
	rec, th, t, err := s.startOn(ctx, threadID, input, output, true)
	if err != nil {
		return Turn{}, err
	}
	if t != nil {
		s.runHere(ctx, th, t, threadID, rec.ID)
		// The record Wait would find (t.rec is the thread's): no second
		// look up of the thread for a turn that ended or paused here.
		th.mu.Lock()
		end := *t.rec
		th.mu.Unlock()
		if end.Status != TurnQueued && end.Status != TurnInProgress {
			return end, nil
		}
	}
	end, err := s.Follow(ctx, threadID, rec.ID)
	if err != nil && end.ID == "" {
		// The turn started: the caller learns which one failed to end.
		end = rec
	}
	return end, err
}

// reserve makes the caller the driver of th, as launch does for the
// goroutine it starts; false when the thread has a driver already (it
// takes the turn). th.mu is held.
func (s *Scheduler) reserve(th *thread) (bool, error) {
	if th.running {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	th.running = true
	s.wg.Add(1)
	return true, nil
}

// runHere runs turn t (turnID) of th (threadID), reserved by reserve, on this goroutine to its
// end or pause; when ctx ends first the turn is interrupted, as Follow
// does. A turn that follows it on the thread (queued, or steered input
// left over) goes on on a driver goroutine of its own.
func (s *Scheduler) runHere(ctx context.Context, th *thread, t *turnRun, threadID, turnID string) {
	stop := func() bool { return false }
	if ctx.Done() != nil {
		// A context that can end (not a library caller's Background).
		stop = context.AfterFunc(ctx, func() {
			// Too late (the turn ended) changes nothing.
			_ = s.Interrupt(context.WithoutCancel(ctx), threadID, turnID)
		})
	}
	next := s.run(th, t)
	stop()
	if next != nil {
		go s.drive(th, next) // drive ends the reservation
		return
	}
	s.wg.Done()
}
