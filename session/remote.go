package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// pendingTimeout bounds one read of a turn's mailbox in the store; a read
// that fails is done again at the turn's next round boundary.
const pendingTimeout = 5 * time.Second

// queuedPoll is how often a node tries to start a turn it queued behind
// another node's: when that node dies, its lease expires and the queued
// turn starts here rather than waiting for no one.
const queuedPoll = time.Second

// shared returns the store as a SharedStore when several nodes share it,
// nil otherwise.
func (s *Scheduler) shared() SharedStore {
	sh, _ := s.c.Store.(SharedStore)
	return sh
}

// runsHere reports whether this scheduler runs the thread's turns now: then
// what it holds of the thread is the truth (one running turn per thread,
// across the nodes), and otherwise the store is.
func runsHere(th *thread) bool {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.running
}

// mailbox sets the inbox of turn t, about to run, to read what other nodes
// left for it in the store at each round boundary (and at each Notice): the
// steered input they accepted, and their interrupt, which cancels the run.
func (s *Scheduler) mailbox(sh SharedStore, th *thread, t *turnRun, cancel context.CancelFunc) {
	threadID, turnID := th.info.ID, t.rec.ID
	t.inbox.setFetch(func() []llm.Item {
		ctx, done := context.WithTimeout(s.bg, pendingTimeout)
		defer done()
		p, err := sh.Pending(ctx, threadID, turnID)
		if err != nil {
			// Read again at the next round boundary: nothing accepted is
			// lost, it stays in the store.
			return nil
		}
		if p.Interrupt {
			cancel()
		}
		return p.Steers
	})
}

// Notice reads the store for the turn n names, when this scheduler runs it:
// the steered input other nodes accepted joins the turn's inbox (the turn
// reads it before its next model request) and an interrupt asked for
// cancels it. It returns how many steered items reached the turn. A notice
// of a turn this scheduler does not run is ignored: its content is never
// believed, only the store.
func (s *Scheduler) Notice(n Notice) int {
	s.mu.Lock()
	th, ok := s.threads[n.ThreadID]
	s.mu.Unlock()
	if !ok {
		return 0
	}
	th.mu.Lock()
	t := th.active
	ok = th.running && t != nil && t.rec.ID == n.TurnID
	th.mu.Unlock()
	if !ok {
		return 0
	}
	return t.inbox.pull()
}

// notify tells the node running turn n (this one included) to read the
// store now. A notice that does not arrive costs latency only.
func (s *Scheduler) notify(ctx context.Context, n Notice) {
	s.Notice(n)
	if s.c.Control != nil {
		_ = s.c.Control.Notify(context.WithoutCancel(ctx), n)
	}
}

// steerElsewhere steers a turn this scheduler does not run: the input is
// committed to the store (the acceptance), then the node running the turn
// is told.
func (s *Scheduler) steerElsewhere(ctx context.Context, sh SharedStore, threadID, turnID string, input llm.Item) (string, error) {
	input.ID = loop.NewID("steer")
	input.TurnID = turnID
	if input.Origin == llm.OriginInput {
		input.Origin = llm.OriginSteer
	}
	if err := sh.AddSteer(ctx, threadID, turnID, input); err != nil {
		return "", s.notActive(ctx, sh, threadID, turnID, fmt.Errorf("session: steer: %w", err))
	}
	s.notify(ctx, Notice{ThreadID: threadID, TurnID: turnID})
	return input.ID, nil
}

// interruptElsewhere interrupts a turn this scheduler does not run. done is
// false when the turn is paused: the thread has been read again and the
// caller abandons the turn as a paused turn of its own.
func (s *Scheduler) interruptElsewhere(ctx context.Context, sh SharedStore, th *thread, turnID string) (done bool, err error) {
	threadID := th.info.ID
	st, err := sh.RequestInterrupt(ctx, threadID, turnID)
	if err != nil {
		return true, s.notActive(ctx, sh, threadID, turnID, fmt.Errorf("session: interrupt: %w", err))
	}
	switch st {
	case TurnInProgress:
		s.notify(ctx, Notice{ThreadID: threadID, TurnID: turnID})
		return true, nil
	case TurnQueued:
		th.mu.Lock()
		defer th.mu.Unlock()
		if i := slices.IndexFunc(th.turns, func(r *Turn) bool { return r.ID == turnID }); i >= 0 {
			th.turns[i].Status, th.turns[i].StopReason, th.turns[i].Ended = TurnInterrupted, loop.StopCancelled, s.c.Now()
		}
		th.queue = slices.DeleteFunc(th.queue, func(q *turnRun) bool { return q.rec.ID == turnID })
		e := s.stamp(th, turnID, event.Event{Type: event.TurnCompleted, Status: string(TurnInterrupted), Code: string(loop.StopCancelled),
			Turn: &event.TurnSummary{Status: TurnInterrupted, StopReason: loop.StopCancelled}})
		th.hub.Handle(e)
		if s.c.Events != nil {
			s.c.Events.Handle(e)
		}
		th.notify()
		return true, nil
	case TurnPaused:
		if err := s.resync(ctx, th); err != nil {
			return true, err
		}
		return false, nil
	}
	return true, s.notActive(ctx, sh, threadID, turnID, fmt.Errorf("session: interrupt: turn %s is %s", turnID, st))
}

// notActive explains why the store refused to control turn turnID as the
// scheduler does for a turn of its own (no active turn, another turn
// active, the turn paused); cause when the store shows the turn running.
func (s *Scheduler) notActive(ctx context.Context, sh SharedStore, threadID, turnID string, cause error) error {
	snap, err := sh.LoadThread(ctx, threadID)
	if err != nil {
		return cause
	}
	var act *Turn
	for i := range snap.Turns {
		if st := snap.Turns[i].Status; st == TurnInProgress || st == TurnPaused {
			act = &snap.Turns[i]
		}
	}
	switch {
	case act == nil:
		return ErrNoActiveTurn
	case act.ID != turnID:
		return &TurnMismatchError{Expected: turnID, Active: act.ID}
	case act.Status == TurnPaused:
		return fmt.Errorf("%w (turn %s)", ErrTurnPaused, act.ID)
	}
	return cause
}

// resync reads a thread this scheduler does not run again from the store:
// another node may have run, paused or answered its turns since this one
// loaded it. The subscriptions and waiters of the thread stay.
func (s *Scheduler) resync(ctx context.Context, th *thread) error {
	snap, err := s.c.Store.LoadThread(ctx, th.info.ID)
	if err != nil {
		return fmt.Errorf("session: read thread %s: %w", th.info.ID, err)
	}
	fresh, leftover := loaded(snap)
	if leftover != nil {
		// Input steered into an ended turn that no node has read yet is
		// left in the store for a load that starts it.
		fresh.queue = slices.DeleteFunc(fresh.queue, func(q *turnRun) bool { return q == leftover })
		fresh.turns = slices.DeleteFunc(fresh.turns, func(r *Turn) bool { return r == leftover.rec })
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.running {
		// It started here meanwhile: what this scheduler holds is the
		// truth again.
		return nil
	}
	th.info, th.history, th.carry, th.stale = fresh.info, fresh.history, nil, false
	th.turns, th.active, th.queue = fresh.turns, fresh.active, fresh.queue
	th.notify()
	return nil
}

// queueElsewhere queues turn t on a thread whose turn runs on another node
// (its claim was refused busy); th.mu is held. The turn is stored queued,
// where the node running the thread finds it when its turn ends, and is
// claimed once more: when the thread ended its turn meanwhile, the queued
// turn would otherwise wait for no one, and it runs here.
func (s *Scheduler) queueElsewhere(ctx context.Context, th *thread, t *turnRun) (Turn, error) {
	t.rec.Status = TurnQueued
	if err := s.c.Store.SaveTurn(ctx, *t.rec); err != nil {
		return Turn{}, fmt.Errorf("session: queue turn: %w", err)
	}
	t.rec.Status = TurnInProgress
	if err := s.claim(ctx, th, t); err != nil {
		t.rec.Status = TurnQueued
		if errors.Is(err, ErrTurnBusy) {
			s.watchQueued(th, t)
			return *t.rec, nil
		}
		return Turn{}, fmt.Errorf("session: start turn: %w", err)
	}
	th.turns = append(th.turns, t.rec)
	th.active = t
	if err := s.launch(th, t); err != nil {
		return Turn{}, err
	}
	return *t.rec, nil
}

// takeQueued makes the thread's queue the store's, where any node queues
// (turn/start on a busy thread); th.mu is held. first, when not nil, is
// this node's own next turn (steered input left by the turn that ended),
// which goes ahead. A turn this node queued that the store no longer holds
// queued (interrupted or taken by another node) is dropped. When the store
// does not answer the queue stays as it is.
func (s *Scheduler) takeQueued(ctx context.Context, sh SharedStore, th *thread, first *turnRun) {
	stored, err := sh.QueuedTurns(ctx, th.info.ID)
	if err != nil {
		return
	}
	mine := make(map[string]*turnRun, len(th.queue))
	for _, q := range th.queue {
		mine[q.rec.ID] = q
	}
	var queue []*turnRun
	if first != nil {
		queue = append(queue, first)
	}
	for i := range stored {
		if q, ok := mine[stored[i].ID]; ok {
			queue = append(queue, q)
			continue
		}
		rec := stored[i]
		th.turns = append(th.turns, &rec)
		queue = append(queue, &turnRun{rec: &rec, input: rec.Input})
	}
	th.queue = queue
}

// fresh reads the thread again when the store is shared, this scheduler
// does not run the thread and holds a paused turn of it: another node may
// have answered or ended that turn since.
func (s *Scheduler) fresh(ctx context.Context, th *thread) error {
	if s.shared() == nil {
		return nil
	}
	th.mu.Lock()
	stale := !th.running && th.active != nil
	th.mu.Unlock()
	if !stale {
		return nil
	}
	return s.resync(ctx, th)
}

// watchQueued tries, every queuedPoll, to start turn t, which this node
// queued behind a turn another node runs, until the turn runs somewhere,
// has ended, or the scheduler closes. The running node takes it when its
// turn ends (takeQueued); the watch is for a node that died first.
func (s *Scheduler) watchQueued(th *thread, t *turnRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	th.watching++ // th.mu is held by the caller
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			th.mu.Lock()
			th.watching--
			th.mu.Unlock()
		}()
		tick := time.NewTicker(queuedPoll)
		defer tick.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-tick.C:
			}
			if s.tryQueued(th, t) {
				return
			}
		}
	}()
}

// tryQueued claims turn t, queued on another node's thread, and runs it
// here when the claim holds; it reports whether the watch is over.
func (s *Scheduler) tryQueued(th *thread, t *turnRun) bool {
	sh := s.shared()
	ctx, cancel := context.WithTimeout(s.bg, pendingTimeout)
	defer cancel()
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.running {
		// This node runs the thread now: its runner takes the queue.
		return true
	}
	t.rec.Status = TurnInProgress
	if err := s.claim(ctx, th, t); err != nil {
		t.rec.Status = TurnQueued
		if !errors.Is(err, ErrTurnBusy) {
			// Ended, or behind a paused turn: whoever answers it takes
			// the queue.
			return true
		}
		// Busy: still queued behind a live turn, or running elsewhere.
		return !s.stillQueued(ctx, sh, th.info.ID, t.rec.ID)
	}
	if !slices.Contains(th.turns, t.rec) {
		th.turns = append(th.turns, t.rec)
	}
	th.active = t
	th.notify()
	if err := s.launch(th, t); err != nil {
		th.active = nil
	}
	return true
}

// stillQueued reports whether the store holds turn turnID queued; true
// when it does not answer (asked again later).
func (s *Scheduler) stillQueued(ctx context.Context, sh SharedStore, threadID, turnID string) bool {
	qs, err := sh.QueuedTurns(ctx, threadID)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(qs, func(q Turn) bool { return q.ID == turnID })
}
