package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// Start starts a turn of input on a thread. It runs at once when the thread
// is idle (status inProgress) and is queued after the running turn
// otherwise (status queued; queued turns run first in, first out). A thread
// whose turn is paused refuses with an error wrapping ErrTurnPaused.
func (s *Scheduler) Start(ctx context.Context, threadID string, input llm.Item) (Turn, error) {
	if err := checkInput(&input); err != nil {
		return Turn{}, err
	}
	return s.start(ctx, threadID, []llm.Item{input}, nil)
}

// Compact compacts the thread's history as a turn of its own, without
// input: the model writes a handoff summary that the thread's next turns
// start from (loop.Engine.Compact). Like Start, it runs at once on an idle
// thread and is queued otherwise. The turn fails when the run's options
// have no context window (loop.Options.Window) or the thread no history.
func (s *Scheduler) Compact(ctx context.Context, threadID string) (Turn, error) {
	return s.start(ctx, threadID, nil, nil)
}

// start starts or queues a turn of input; no input is a compaction.
func (s *Scheduler) start(ctx context.Context, threadID string, input []llm.Item, output *llm.Output) (Turn, error) {
	rec, _, _, err := s.startOn(ctx, threadID, input, output, false)
	return rec, err
}

// startOn is start. With here set, a turn that can start now is claimed
// but not launched: it is returned with its thread, for the caller to run
// on its own goroutine (runHere); otherwise the turn returned is nil.
func (s *Scheduler) startOn(ctx context.Context, threadID string, input []llm.Item, output *llm.Output, here bool) (Turn, *thread, *turnRun, error) {
	if s.draining.Load() {
		return Turn{}, nil, nil, drainingError{}
	}
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return Turn{}, nil, nil, err
	}
	if err := s.fresh(ctx, th); err != nil {
		return Turn{}, nil, nil, err
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	if err := checkNotChild(th); err != nil {
		return Turn{}, nil, nil, err
	}
	if a := th.active; a != nil && a.state != nil && a.answer == nil {
		return Turn{}, nil, nil, fmt.Errorf("%w (turn %s, call %s)", ErrTurnPaused, a.rec.ID, a.state.Pause.CallID)
	}
	t := newTurnRun(Turn{ID: loop.NewID("turn"), ThreadID: threadID, Status: TurnQueued, Input: input, Started: s.c.Now(), OutputSpec: output})
	t.input = input
	if th.active != nil {
		if err := s.c.Store.SaveTurn(ctx, *t.rec); err != nil {
			return Turn{}, nil, nil, fmt.Errorf("session: queue turn: %w", err)
		}
		th.turns = append(th.turns, t.rec)
		th.queue = append(th.queue, t)
		return *t.rec, nil, nil, nil
	}
	t.rec.Status = TurnInProgress
	if err := s.claim(ctx, th, t); err != nil {
		if s.shared() != nil && errors.Is(err, ErrTurnBusy) {
			// Another node runs the thread: queued there.
			rec, err := s.queueElsewhere(ctx, th, t)
			return rec, nil, nil, err
		}
		return Turn{}, nil, nil, fmt.Errorf("session: start turn: %w", err)
	}
	th.turns = append(th.turns, t.rec)
	th.active = t
	if here {
		ok, err := s.reserve(th)
		if err != nil {
			return Turn{}, nil, nil, err
		}
		if ok {
			return *t.rec, th, t, nil
		}
		return *t.rec, nil, nil, nil
	}
	if err := s.launch(th, t); err != nil {
		return Turn{}, nil, nil, err
	}
	return *t.rec, nil, nil, nil
}

// newTurnRun returns a turn of the scheduler's with its record rec, both
// in one allocation.
func newTurnRun(rec Turn) *turnRun {
	b := &struct {
		t   turnRun
		rec Turn
	}{rec: rec}
	b.t.rec = &b.rec
	return &b.t
}

// claim makes t, inProgress, the thread's running turn in the store (the
// one operation every scheduler and process sharing it goes through), and
// reads the thread's history again when this scheduler's copy is not the
// store's; th.mu is held.
func (s *Scheduler) claim(ctx context.Context, th *thread, t *turnRun) error {
	c, err := s.c.Store.ClaimTurn(ctx, *t.rec)
	if err != nil {
		return err
	}
	if t.state == nil && (th.stale || c.Items != len(th.history)) {
		s.refresh(ctx, th)
	}
	return nil
}

// checkInput makes input a user item and refuses one without parts.
func checkInput(it *llm.Item) error {
	if len(it.Parts) == 0 {
		return ErrEmptyInput
	}
	for _, p := range it.Parts {
		if p.Kind == llm.PartCall || p.Kind == llm.PartResult {
			return fmt.Errorf("session: input holds a %s part; send text", p.Kind)
		}
	}
	it.Role = llm.RoleUser
	return nil
}

// launch starts the thread's runner goroutine on t unless one runs; th.mu
// is held.
func (s *Scheduler) launch(th *thread, t *turnRun) error {
	if th.running {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	th.running = true
	s.wg.Add(1)
	go s.drive(th, t)
	return nil
}

// Steer adds input to the thread's active turn, which must be
// expectedTurnID. The input is persisted before Steer returns the id of its
// item; the turn reads it before its next model request (after the running
// round's tools finish), and a turn about to finish goes on to answer it.
// Input that arrives as a turn ends is never dropped: it becomes the
// thread's next turn. A turn paused waiting for the user refuses steer with
// an error wrapping ErrTurnPaused: answer it instead.
func (s *Scheduler) Steer(ctx context.Context, threadID, expectedTurnID string, input llm.Item) (string, error) {
	if err := checkInput(&input); err != nil {
		return "", err
	}
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return "", err
	}
	if err := notChild(th); err != nil {
		return "", err
	}
	if sh := s.shared(); sh != nil && !runsHere(th) {
		return s.steerElsewhere(ctx, sh, threadID, expectedTurnID, input)
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	t := th.active
	if t == nil {
		return "", ErrNoActiveTurn
	}
	if t.rec.ID != expectedTurnID {
		return "", &TurnMismatchError{Expected: expectedTurnID, Active: t.rec.ID}
	}
	if t.state != nil && t.answer == nil {
		// Input for a turn that waits on the user is its answer, or a new
		// turn once the pause is resolved.
		return "", fmt.Errorf("%w (turn %s)", ErrTurnPaused, t.rec.ID)
	}
	if n := t.inbox.len(); n >= MaxPendingSteers {
		return "", fmt.Errorf("turn %s holds %d steered inputs it has not read yet: %w", t.rec.ID, n, ErrTooManySteers)
	}
	input.ID = loop.NewID("steer")
	input.TurnID = t.rec.ID
	if input.Origin == llm.OriginInput {
		input.Origin = llm.OriginSteer
	}
	if err := s.c.Store.AddSteer(ctx, threadID, t.rec.ID, input); err != nil {
		return "", fmt.Errorf("session: steer: %w", err)
	}
	t.inbox.put(input)
	return input.ID, nil
}

// Interrupt cancels turn turnID of a thread. A running turn gets the
// cancellation (running tools a grace period, then aborted results with
// their partial output) and ends interrupted; a paused turn ends
// interrupted at once; a queued turn is dropped from the queue. Interrupt
// returns without waiting; Wait or the turn_completed event tell the end.
func (s *Scheduler) Interrupt(ctx context.Context, threadID, turnID string) error {
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return err
	}
	if err := notChild(th); err != nil {
		return err
	}
	if sh := s.shared(); sh != nil && !runsHere(th) {
		if done, err := s.interruptElsewhere(ctx, sh, th, turnID); done {
			return err
		}
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	t := th.active
	if t != nil && t.rec.ID == turnID {
		switch {
		case t.cancel != nil:
			t.cancel()
		case t.state != nil && t.answer == nil:
			return s.abandon(ctx, th, t)
		default:
			// Launched but not yet running: the run starts cancelled.
			t.interrupt = true
		}
		return nil
	}
	if i := slices.IndexFunc(th.queue, func(q *turnRun) bool { return q.rec.ID == turnID }); i >= 0 {
		q := th.queue[i]
		prev := *q.rec
		q.rec.Status, q.rec.StopReason, q.rec.Ended = TurnInterrupted, loop.StopCancelled, s.c.Now()
		if err := s.c.Store.SaveTurn(ctx, *q.rec); err != nil {
			// Not recorded: the turn stays queued, here as in the store.
			*q.rec = prev
			return fmt.Errorf("session: interrupt queued turn: %w", err)
		}
		th.queue = slices.Delete(th.queue, i, i+1)
		s.emit(th, q.rec.ID, event.Event{Type: event.TurnCompleted, Status: string(TurnInterrupted), Code: string(loop.StopCancelled),
			Turn: &event.TurnSummary{Status: TurnInterrupted, StopReason: loop.StopCancelled}})
		th.notify()
		return nil
	}
	if t == nil {
		return ErrNoActiveTurn
	}
	return &TurnMismatchError{Expected: turnID, Active: t.rec.ID}
}

// Answer answers the thread's paused turn (ask_user answers or an approval
// decision); the same turn goes on. An answer for another turn or call is
// refused with a *loop.PauseMismatchError and changes nothing.
func (s *Scheduler) Answer(ctx context.Context, threadID string, a loop.Answer) error {
	if s.draining.Load() {
		return drainingError{}
	}
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return err
	}
	if s.shared() != nil && !runsHere(th) {
		// Another node may have paused, answered or ended the turn since
		// this one read the thread.
		if err := s.resync(ctx, th); err != nil {
			return err
		}
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	if err := checkNotChild(th); err != nil {
		return err
	}
	t := th.active
	if t == nil || t.state == nil || t.answer != nil || t.state.Pause == nil {
		return loop.ErrNotPaused
	}
	p := t.state.Pause
	if a.TurnID != t.rec.ID || a.CallID != p.CallID {
		return &loop.PauseMismatchError{WantTurn: t.rec.ID, WantCall: p.CallID, GotTurn: a.TurnID, GotCall: a.CallID}
	}
	if p.Kind == tool.PauseApproval && a.Decision == "" {
		return loop.ErrNoDecision
	}
	t.answer = &a
	state := t.rec.State
	t.rec.Status, t.rec.Pause, t.rec.State = TurnInProgress, nil, nil
	// Claimed like a new turn: another process may have answered it, or
	// run the thread on, since this one loaded it.
	if err := s.claimAnswer(ctx, th, t, a); err != nil {
		t.answer = nil
		t.rec.Status, t.rec.Pause, t.rec.State = TurnPaused, p, state
		return fmt.Errorf("session: answer: %w", err)
	}
	th.notify()
	return s.launch(th, t)
}

// drive runs the thread's turns one after another until it is idle or its
// turn is paused.
func (s *Scheduler) drive(th *thread, t *turnRun) {
	defer s.wg.Done()
	for t != nil {
		t = s.run(th, t)
	}
}

// run runs (or resumes) one turn to its end or its next pause, and returns
// the turn to run next, if any.
func (s *Scheduler) run(th *thread, t *turnRun) *turnRun {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	th.mu.Lock()
	t.cancel = cancel
	if t.interrupt {
		cancel()
	}
	info := cloneThread(th.info)
	history, carry := th.history, th.carry
	state, answer := t.state, t.answer
	t.state, t.answer = nil, nil
	cont := t.cont
	t.cont = nil
	th.mu.Unlock()

	var out *loop.Outcome
	hooks := &runHooks{tail: settle{hub: &th.hub}}
	tail := &hooks.tail
	var keeper *TraceKeeper
	if s.c.Traces != nil {
		keeper = &hooks.keeper
	}
	if sh := s.shared(); sh != nil {
		s.mailbox(sh, th, t, cancel)
	}
	o, release, err := s.c.Setup(ctx, info)
	if err == nil {
		o.Steer = &t.inbox
		hooks.journal = fencedJournal{t: t, next: s.c.Store, owner: info.Owner}
		o.Journal = &hooks.journal
		o.Waiter = nil
		hooks.fan = fanout{t: t, hs: [2]event.Handler{o.Events, s.c.Events}, tail: tail, keeper: keeper}
		o.Events = &hooks.fan
		o.Yield = func() bool { return s.yield(t) }
		var eng *loop.Engine
		if err = withOutput(&o, t, state, info.Settings.Output); err == nil {
			eng, err = loop.New(o)
		}
		if err == nil {
			lt := loop.Turn{ThreadID: info.ID, ID: t.rec.ID, History: history, Input: t.input, Approved: info.Settings.Approved, Carry: carry}
			switch {
			case state != nil && cont != nil && answerRuns(o.Tools, state, *answer):
				// Taken over from a node lost while it ran the call this
				// answer approved: not run twice; the model decides.
				out, err = s.goOn(ctx, eng, o, lt, cont)
			case state != nil:
				if err = s.startAnswer(ctx, info.ID, t, o.Tools, state, *answer); err == nil {
					out, err = eng.Resume(ctx, state, *answer)
				}
			case cont != nil:
				out, err = s.goOn(ctx, eng, o, lt, cont)
			case len(t.input) == 0:
				out, err = eng.Compact(ctx, lt)
			default:
				if s.c.Input != nil {
					lt.Input = s.c.Input(ctx, info, o, t.rec.ID, slices.Clone(t.input))
				}
				out, err = eng.Run(ctx, lt)
			}
		}
	}
	if release != nil {
		release()
	}
	if yielded(out, t) {
		// Handed over at a round boundary (Drain): the turn goes on on
		// another node; nothing of its end is recorded or announced here.
		th.mu.Lock()
		defer th.mu.Unlock()
		t.cancel = nil
		s.handedOver(th, t)
		return nil
	}
	engineStatus := loop.Status("")
	if out != nil {
		engineStatus = out.Status
		if s.c.Verify {
			verify(out, o.Model)
		}
	}
	if keeper != nil {
		// Kept before the turn's end is recorded, so that whoever waits
		// for the end finds its trace.
		if kerr := keeper.Keep(s.bg, s.c.Traces, info.ID); kerr != nil {
			s.warn(th, t.rec.ID, fmt.Sprintf("the turn's trace was not kept: %v", kerr))
		}
	}
	if out == nil {
		// The engine never ran: the turn fails with the reason.
		if state == nil {
			s.emit(th, t.rec.ID, event.Event{Type: event.TurnStarted})
		}
		out = &loop.Outcome{TurnID: t.rec.ID, Status: loop.StatusFailed, StopReason: loop.StopProviderError, Err: fmt.Errorf("session: %w", err), Approved: info.Settings.Approved}
		tail.Handle(s.stamp(th, t.rec.ID, event.Event{Type: event.TurnCompleted, Status: string(out.Status), Code: string(out.StopReason), Turn: out.Summary()}))
	}
	if s.c.Outcome != nil {
		s.c.Outcome(info, out)
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	t.cancel = nil
	rec := s.ended(th, t, out)
	if t.gone.Load() {
		// The store refused the end: another node took the turn (this
		// node's lease ended). Its end is that node's to announce.
		s.handedOver(th, t)
		return nil
	}
	if engineStatus != "" && rec.Status != engineStatus {
		// The store refused the end, or the model's check failed the
		// turn: subscribers learn the turn failed, and why, not what the
		// engine reported.
		tail.fail(rec)
	}
	nt, failed := s.next(th)
	tail.flush()
	s.publish(th, failed)
	return nt
}

// runHooks are what the scheduler hangs on one run's engine options, made
// in one allocation: the way of its events to the thread's subscribers
// (tail) and to its trace (keeper), and its journal.
type runHooks struct {
	tail    settle
	keeper  TraceKeeper
	journal fencedJournal
	fan     fanout
}

// fanout passes each event of a run to its handlers in order until the
// run's turn is handed over (what a run does after that is not the turn's
// any more): its telemetry's and Config.Events (either may be nil), the
// tail, and the trace keeper (nil without a TraceStore). The last two take
// it by pointer. An event is 336 bytes, and a tool's call emits on a
// goroutine of its own (dispatch) that starts with a 2 KiB stack: a copy
// of it at each step on the way made that stack grow (copied whole) at
// every call.
type fanout struct {
	t      *turnRun
	hs     [2]event.Handler
	tail   *settle
	keeper *TraceKeeper
}

// Handle implements event.Handler.
func (f *fanout) Handle(e event.Event) {
	if f.t.gone.Load() {
		return
	}
	if f.hs[0] != nil || f.hs[1] != nil {
		f.others(&e)
	}
	f.tail.handle(&e)
	if f.keeper != nil {
		f.keeper.handle(&e)
	}
}

// others passes *e to the handlers besides the tail and the keeper: on a
// frame of its own, so that the room its calls need for a copy of the
// event is taken only when there are any.
//
//go:noinline
func (f *fanout) others(e *event.Event) {
	for _, h := range f.hs {
		if h != nil {
			h.Handle(*e)
		}
	}
}

// publish hands events the scheduler made to the thread's subscribers.
func (s *Scheduler) publish(th *thread, evs []event.Event) {
	for _, e := range evs {
		th.hub.Handle(e)
	}
}

// settle publishes a run's events to the thread's subscribers, except those
// that end the run (pause_requested, turn_completed, and any after them):
// they are held until the scheduler has recorded the end, so that a client
// acting on them (answering the pause, steering or starting the next turn)
// finds the thread in the state they announce rather than the turn still
// active.
type settle struct {
	hub *hub

	mu   sync.Mutex
	held []event.Event
}

// Handle implements event.Handler.
func (r *settle) Handle(e event.Event) { r.handle(&e) }

// handle is Handle of *e, which it does not keep.
func (r *settle) handle(e *event.Event) {
	r.mu.Lock()
	if len(r.held) > 0 || e.Type == event.PauseRequested || e.Type == event.TurnCompleted {
		r.hold(e)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.hub.publish(e)
}

// hold keeps a copy of *e to publish later; r.mu is held. Its frame is
// apart from handle's, which most events take (see fanout).
//
//go:noinline
func (r *settle) hold(e *event.Event) {
	// Copied now: what it points to may change before it is published.
	// (Not into room in the run's hooks: an idle thread's last run can
	// stay reachable from its items, through the context a model's
	// stream keeps, and the hooks with it; BenchmarkIdleThreads.)
	r.held = append(r.held, detach(*e))
}

// fail rewrites the held end of the run to what rec says (a turn that
// failed after the engine ended it); a pause it announced is dropped: the
// turn no longer waits.
func (r *settle) fail(rec *Turn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = slices.DeleteFunc(r.held, func(e event.Event) bool { return e.Type == event.PauseRequested })
	for i := range r.held {
		e := &r.held[i]
		if e.Type != event.TurnCompleted {
			continue
		}
		e.Status, e.Code = string(rec.Status), string(rec.StopReason)
		sum := event.TurnSummary{}
		if e.Turn != nil {
			sum = *e.Turn
		}
		sum.Status, sum.StopReason, sum.Error = rec.Status, rec.StopReason, rec.Error
		e.Turn = &sum
	}
}

// flush publishes the held events.
func (r *settle) flush() {
	r.mu.Lock()
	held := r.held
	r.held = nil
	r.mu.Unlock()
	for _, e := range held {
		r.hub.Handle(e)
	}
}

// ended records how a run ended, and returns the turn's record; th.mu is
// held. A write the store refuses (a full disk) is never passed over: when
// the turn's end cannot be stored, the turn fails with the write error (its
// record says so, and the caller publishes that), and the thread's history
// is read again from the store before its next turn.
func (s *Scheduler) ended(th *thread, t *turnRun, out *loop.Outcome) *Turn {
	rec := t.rec
	rec.Status = out.Status
	rec.StopReason = out.StopReason
	rec.Answer, rec.Output = out.Answer, out.Output
	rec.Rounds, rec.SettlementRounds, rec.ToolSteps = out.Rounds, out.SettlementRounds, out.ToolSteps
	rec.Usage, rec.Cost = out.Usage, out.Cost
	rec.Error = ""
	if out.Err != nil {
		rec.Error = out.Err.Error()
	}
	rec.Pause, rec.State = nil, nil
	// A paused turn took the carry with it (its State goes on); an ended
	// one leaves the next (nil when the engine never ran or the scheduler
	// wrote the items itself).
	th.carry = nil
	if out.Status == loop.StatusPaused && out.State != nil {
		rec.Pause, rec.State = out.Pause, encodeState(out.State)
		t.state = out.State
	} else {
		rec.Ended = s.c.Now()
		// Appended in place: no one but the scheduler holds the slice's
		// room (a running turn reads only up to its length), so a turn
		// costs what it added, not a copy of the thread.
		th.history = append(th.history, out.Items...)
		th.carry = out.Carry
	}
	if out.Status == loop.StatusFailed {
		// A failed turn may have failed writing its items: what this
		// scheduler holds is checked against the store before the next.
		th.stale = true
	}
	th.info.Settings.Approved = slices.Clone(out.Approved)
	th.info.Updated = s.c.Now()
	ctx := s.bg
	if err := s.c.Store.SaveTurn(ctx, *rec); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			// Another node owns the turn now: its end is that node's.
			t.gone.Store(true)
		}
		rec.Status, rec.StopReason = TurnFailed, StopStoreError
		rec.Error = fmt.Sprintf("session: the turn ran but its end (%s) could not be recorded: %v", out.Status, err)
		rec.Pause, rec.State, t.state = nil, nil, nil
		if rec.Ended.IsZero() {
			rec.Ended = s.c.Now()
		}
		th.stale, th.carry = true, nil
	}
	if err := s.c.Store.SaveThread(ctx, th.info); err != nil {
		// The turn is recorded as it ended; what the thread lost is its
		// approvals of this turn, which the user is told of.
		th.stale = true
		s.warn(th, rec.ID, fmt.Sprintf("the thread's settings (tools approved in this turn) could not be recorded: %v", err))
	}
	th.notify()
	return rec
}

// next picks the thread's next turn after a run ended; th.mu is held. It
// returns nil, and gives up the thread, when the active turn is paused or
// nothing is queued. Queued turns that could not be claimed end failed;
// failed holds their turn_completed events, for the caller to publish after
// the end of the run that ended.
func (s *Scheduler) next(th *thread) (nt *turnRun, failed []event.Event) {
	if t := th.active; t != nil && t.state == nil {
		var first *turnRun
		th.active = nil
		// Steer accepted after the turn's last read goes on as the next
		// turn, ahead of the queue: it was meant for now.
		if left := t.inbox.Drain(); len(left) > 0 {
			nt := &turnRun{rec: &Turn{ID: loop.NewID("turn"), ThreadID: th.info.ID, Status: TurnQueued, Input: left, Started: s.c.Now()}, input: left}
			th.turns = append(th.turns, nt.rec)
			th.queue = slices.Insert(th.queue, 0, nt)
			first = nt
		}
		if sh := s.shared(); sh != nil {
			// Turns other nodes queued while this one ran the thread.
			s.takeQueued(s.bg, sh, th, first)
		}
	}
	if th.active != nil || len(th.queue) == 0 {
		th.running = false
		return nil, nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.draining.Load() {
		// A draining node starts nothing more: the queued turns stay
		// queued in the store, for another node to take.
		th.running = false
		return nil, nil
	}
	ctx := s.bg
	for len(th.queue) > 0 {
		t := th.queue[0]
		th.queue = th.queue[1:]
		t.rec.Status = TurnInProgress
		err := s.claim(ctx, th, t)
		if err == nil {
			th.active = t
			th.notify()
			return t, failed
		}
		if sh := s.shared(); sh != nil && !s.stillQueued(ctx, sh, th.info.ID, t.rec.ID) {
			// Another node took it (the one that queued it, when this
			// node's turn outlived its lease), or interrupted it: not
			// this node's to end.
			t.rec.Status = TurnQueued
			continue
		}
		// Refused (another process took the thread meanwhile) or not
		// written: the turn ends failed, saying why, and the next is
		// tried.
		t.rec.Status, t.rec.StopReason, t.rec.Ended = TurnFailed, StopNotStarted, s.c.Now()
		t.rec.Error = fmt.Sprintf("session: the queued turn could not start: %v", err)
		if serr := s.c.Store.SaveTurn(ctx, *t.rec); serr != nil {
			t.rec.Error += fmt.Sprintf(" (and recording that failed too: %v)", serr)
		}
		failed = append(failed, s.stamp(th, t.rec.ID, event.Event{Type: event.TurnCompleted, Status: string(TurnFailed), Code: StopNotStarted,
			Turn: &event.TurnSummary{Status: TurnFailed, StopReason: StopNotStarted, Error: t.rec.Error}}))
		th.notify()
	}
	th.running = false
	return nil, failed
}

// abortedPlaceholder returns the aborted result, saying text, that answers
// it when it is a pending result's placeholder: in the placeholder's
// place (its id and turn), as a pause that will never be answered is.
func abortedPlaceholder(it llm.Item, text string) (llm.Item, bool) {
	res := it.Result()
	if it.Role != llm.RoleTool || res == nil || res.Status != llm.ResultPending {
		return llm.Item{}, false
	}
	ab := llm.ToolResult(llm.Result{CallID: res.CallID, Name: res.Name, Content: text, Status: llm.ResultAborted})
	ab.ID, ab.TurnID = it.ID, it.TurnID
	return ab, true
}

// abandon ends a paused turn as interrupted; th.mu is held. Its pause
// placeholders are answered as aborted and a marker tells the model in
// later turns that the turn was cut, as the engine does for a running turn
// (DESIGN §2.5).
func (s *Scheduler) abandon(ctx context.Context, th *thread, t *turnRun) error {
	st := t.state
	ctx = context.WithoutCancel(ctx)
	text := fmt.Sprintf("aborted by user after %.1fs, before the user answered", st.Elapsed.Seconds())
	items := slices.Clone(st.TurnItems())
	var firstErr error
	keep := func(it *llm.Item) {
		if err := s.c.Store.Record(ctx, th.info.ID, *it); err != nil && firstErr == nil {
			firstErr = err
		}
		s.emit(th, t.rec.ID, event.Event{Type: event.ItemAdded, Item: it})
	}
	for i := range items {
		if it, ok := abortedPlaceholder(items[i], text); ok {
			items[i] = it
			keep(&items[i])
		}
	}
	marker := llm.Item{
		ID: fmt.Sprintf("%s.%d", t.rec.ID, st.NextItem+1), TurnID: t.rec.ID, Role: llm.RoleUser, Origin: llm.OriginMarker,
		Parts: []llm.Part{{Kind: llm.PartText, Text: pausedMarker}},
	}
	items = append(items, marker)
	keep(&items[len(items)-1])
	out := &loop.Outcome{
		ThreadID: th.info.ID, TurnID: t.rec.ID, Status: loop.StatusInterrupted, StopReason: loop.StopCancelled,
		Rounds: st.Rounds, SettlementRounds: st.SettlementRounds, ToolSteps: st.ToolSteps, Usage: st.Usage, Cost: st.Cost,
		Items: items, Approved: st.Approved, Err: firstErr,
	}
	t.state = nil
	rec := s.ended(th, t, out)
	nt, failed := s.next(th)
	// Published once the turn is recorded as ended, and before the next
	// turn starts.
	sum := out.Summary()
	sum.Status, sum.StopReason, sum.Error = rec.Status, rec.StopReason, rec.Error
	s.emit(th, t.rec.ID, event.Event{Type: event.TurnCompleted, Status: string(rec.Status), Code: string(rec.StopReason), Turn: sum})
	s.publish(th, failed)
	if nt != nil {
		if err := s.launch(th, nt); err != nil {
			return err
		}
	}
	if firstErr != nil {
		return fmt.Errorf("session: interrupt paused turn: %w", firstErr)
	}
	if rec.Status == TurnFailed {
		return fmt.Errorf("session: interrupt paused turn: %s", rec.Error)
	}
	return nil
}

// pausedMarker tells the model, in later turns, that a turn was cut while
// it waited for the user.
const pausedMarker = "[rein] The previous turn was interrupted by the user while it waited for an answer. " +
	"Calls that waited for the user were not run; check the current state before retrying anything."

// verify fails a completed run whose model reports a fault when asked
// after the run (Config.Verify).
func verify(out *loop.Outcome, m llm.Model) {
	v, ok := m.(llm.Verifier)
	if !ok || out.Status != loop.StatusCompleted {
		return
	}
	if err := v.Verify(); err != nil {
		out.Status = loop.StatusFailed
		out.Err = fmt.Errorf("the model's check after the turn failed: %w", err)
	}
}
