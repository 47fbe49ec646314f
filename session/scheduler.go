package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// Setup returns the engine options for a turn of thread th: the model, the
// tools, the budgets. The scheduler sets Steer, Journal and Waiter itself
// (a pause ends the run and the turn waits, paused, for [Scheduler.Answer])
// and adds its own handler to Events. release, when not nil, is called when
// the run ends.
type Setup func(ctx context.Context, th Thread) (o loop.Options, release func(), err error)

// Config configures a Scheduler.
type Config struct {
	// Store persists threads, turns and items. Required.
	Store Store
	// Setup builds each run's engine options. Required.
	Setup Setup
	// SubscriberBuffer is how many events a subscriber may fall behind
	// (default DefaultSubscriberBuffer). It is a bound, not an allocation:
	// a subscription holds only the events actually queued.
	SubscriberBuffer int
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
	// Traces, when not nil, keeps the events of every run (streamed deltas
	// left out) when the run ends, so that a turn of any door can be
	// looked at later (rein trace THREAD). A failed write costs only the
	// trace: the thread's subscribers and Events get a warning.
	Traces TraceStore
	// Events, when not nil, receives the events of every run besides the
	// thread's subscribers: what watches every turn of the runtime, such
	// as OpenTelemetry export.
	Events event.Handler
	// Input, when not nil, rewrites a new turn's input just before the
	// engine runs it, given the run's options: the knowledge seed of the
	// attached bases joins the first user message there. A resumed or
	// compacted turn is not rewritten.
	Input Input
	// Verify, when set, checks a run the engine ended completed whose
	// model can check itself (an llm.Verifier: the scripted model, its
	// script played to its end and every expectation held): a fault fails
	// the turn, before its end is recorded. It is for a one-shot door (rein
	// run, rein answer), where a run is the whole of the model's work; a
	// runtime of many turns on one model (chat, serve) leaves it off.
	Verify bool
	// Control, when not nil and the store is a SharedStore, carries
	// notices to the node running a turn that this one accepted steered
	// input or an interrupt for (see SharedStore). Without it, that node
	// reads them at the turn's next round boundary.
	Control Control
	// Outcome, when not nil, is given every run's outcome as the engine
	// returned it (or as the scheduler made it for a run that never
	// started), before its end is recorded: for a door in the same process
	// that hands its caller the outcome itself, such as the library facade
	// (the turn's items, a paused turn's state, the engine's error as a
	// value). It is called on the run's goroutine and must not modify the
	// outcome while the run goes on; once the turn's end is recorded (Wait
	// or RunTurn returned it) the scheduler holds it no more.
	Outcome func(th Thread, out *loop.Outcome)
	// Forgotten, when not nil, is told the id of each thread the scheduler
	// dropped from its memory (Forget, EvictIdle), after it did and
	// outside its locks: what a door keeps per thread (the runtime's
	// opened model, a thread's own tool set) goes with it, so that a
	// server sweeping idle threads does not keep what it swept.
	Forgotten func(threadID string)
}

// Input rewrites the input of turn turnID of thread th before the engine
// runs it; o are the run's options (its tools and event handler).
type Input func(ctx context.Context, th Thread, o loop.Options, turnID string, input []llm.Item) []llm.Item

// Scheduler runs the turns of many threads: one at a time per thread, any
// number of threads at once. Each thread with work has one goroutine, owned
// by the scheduler, that runs its turns in order and exits when the thread
// is idle or paused; Close interrupts them and waits for them.
type Scheduler struct {
	c Config

	ctx    context.Context // parent of every run; cancelled by Close
	cancel context.CancelFunc
	// bg is ctx without its cancellation, for the writes that must
	// outlive it (a run's end), made once.
	bg context.Context
	wg sync.WaitGroup // the threads' runner goroutines

	mu      sync.Mutex
	closed  bool
	threads map[string]*thread

	// draining is set by Drain: no new turns, running ones leave at
	// their next round boundary.
	draining atomic.Bool
}

// New returns a scheduler, or an error saying what the config lacks.
func New(c Config) (*Scheduler, error) {
	if c.Store == nil {
		return nil, errors.New("session: Config.Store is nil; give a store (NewMemStore for one in memory)")
	}
	if c.Setup == nil {
		return nil, errors.New("session: Config.Setup is nil; give a function returning each run's engine options")
	}
	if c.SubscriberBuffer <= 0 {
		c.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Scheduler{c: c, ctx: ctx, cancel: cancel, bg: context.WithoutCancel(ctx), threads: make(map[string]*thread)}, nil
}

// thread is a loaded thread's scheduling state.
type thread struct {
	hub hub

	mu   sync.Mutex
	info Thread
	// history holds the items of ended turns; the base of a paused one.
	// Its room beyond len is the scheduler's: turns get it to read only.
	history []llm.Item
	// carry is what the last ended turn left for the next one (loop.Carry),
	// nil when nothing was left or the history changed another way.
	carry   *loop.Carry
	turns   []*Turn    // every turn of the thread, in order
	active  *turnRun   // the running or paused turn
	queue   []*turnRun // turns waiting for the active one, FIFO
	running bool       // a runner goroutine owns the thread
	// stale says history may differ from the store's (a write failed):
	// it is read again before the next turn runs.
	stale bool
	// changed is closed when the thread's turns change, for Wait; made
	// by the first Wait after the last change (nil: no one waits).
	changed chan struct{}
	// used is when a call last named the thread (EvictIdle); guarded by
	// the scheduler's mu, not th.mu.
	used time.Time
	// watching counts the turns this node queued behind another node's
	// that it watches (watchQueued): the thread is not forgotten meanwhile.
	watching int
}

// turnRun is a turn the scheduler holds: the active one or a queued one.
type turnRun struct {
	rec   *Turn
	input []llm.Item
	inbox inbox
	// cancel is set while the turn runs.
	cancel context.CancelFunc
	// interrupt records an interrupt that came before the run began.
	interrupt bool
	// state is set while the turn is paused; answer when it is answered.
	state  *loop.State
	answer *loop.Answer
	// cont is set for a turn taken over from another node: it goes on
	// from its committed items (Continue).
	cont *continuation
	// gone is set once the turn is handed over to another node (Drain):
	// nothing this run does is the turn's any more.
	gone atomic.Bool
}

// notify wakes Wait callers; th.mu is held.
func (th *thread) notify() {
	if th.changed != nil {
		close(th.changed)
		th.changed = nil
	}
}

// waitChange returns the channel that notify closes next; th.mu is held.
func (th *thread) waitChange() <-chan struct{} {
	if th.changed == nil {
		th.changed = make(chan struct{})
	}
	return th.changed
}

// CreateThread creates and persists a thread.
func (s *Scheduler) CreateThread(ctx context.Context, cfg ThreadConfig) (Thread, error) {
	return s.CreateOwnedThread(ctx, cfg, "")
}

// CreateOwnedThread is CreateThread for a thread owned by owner, the name of
// a named token (Thread.Owner): the store keeps it with the thread.
func (s *Scheduler) CreateOwnedThread(ctx context.Context, cfg ThreadConfig, owner string) (Thread, error) {
	now := s.c.Now()
	info := Thread{ID: loop.NewID("thread"), Settings: cfg, Created: now, Updated: now, Owner: owner}
	if err := s.c.Store.SaveThread(ctx, info); err != nil {
		return Thread{}, fmt.Errorf("session: create thread: %w", err)
	}
	th := &thread{info: info, used: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Thread{}, ErrClosed
	}
	s.threads[info.ID] = th
	return info, nil
}

// ResumeThread loads a thread from the store (once per scheduler) and
// returns its record. A thread whose turn is paused can then be answered.
func (s *Scheduler) ResumeThread(ctx context.Context, id string) (Thread, error) {
	th, err := s.thread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	return cloneThread(th.info), nil
}

// ListThreads lists the store's threads, most recently updated first.
func (s *Scheduler) ListThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error) {
	return s.c.Store.ListThreads(ctx, limit, cursor)
}

// ReadThread returns a thread with its turns and items as the store holds
// them, the running turn's items so far included.
func (s *Scheduler) ReadThread(ctx context.Context, id string) (*Snapshot, error) {
	return s.c.Store.LoadThread(ctx, id)
}

// thread returns the loaded thread id, loading it from the store first.
func (s *Scheduler) thread(ctx context.Context, id string) (*thread, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	th, ok := s.threads[id]
	if ok {
		th.used = s.c.Now()
	}
	s.mu.Unlock()
	if ok {
		return th, nil
	}
	snap, err := s.c.Store.LoadThread(ctx, id)
	if err != nil {
		return nil, err
	}
	th, leftover := loaded(snap)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if prev, ok := s.threads[id]; ok {
		// Loaded meanwhile by another caller: theirs wins.
		prev.used = s.c.Now()
		s.mu.Unlock()
		return prev, nil
	}
	th.used = s.c.Now()
	s.threads[id] = th
	s.mu.Unlock()

	th.mu.Lock()
	defer th.mu.Unlock()
	if th.active == nil && len(th.queue) > 0 {
		// Turns queued before a restart run now, as they were asked for
		// (steered input a stopped process accepted after its turn's last
		// read first, as it would have in that process). Claimed first:
		// while another process runs a turn of the thread they are its
		// queue, not ours, and stay in the store for it. Claim errors are
		// not the caller's: what is not claimed stays stored (steered
		// input pending until a turn records it), so a later load finds
		// it.
		t := th.queue[0]
		t.rec.Status = TurnInProgress
		if t == leftover {
			t.rec.Started = s.c.Now()
		}
		c, err := s.c.Store.ClaimTurn(context.WithoutCancel(ctx), *t.rec)
		if err != nil {
			t.rec.Status = TurnQueued
			th.queue = nil
			th.turns = slices.DeleteFunc(th.turns, func(r *Turn) bool { return r.Status == TurnQueued })
			return th, nil
		}
		th.active, th.queue = t, th.queue[1:]
		if c.Items != len(th.history) {
			s.refresh(ctx, th)
		}
		if err := s.launch(th, t); err != nil {
			return nil, err
		}
	}
	return th, nil
}

// refresh reads the thread's history again from the store, the only truth,
// when this scheduler's copy may differ from it: another process wrote to
// the thread, or a write of this one failed. th.mu is held. When the read
// fails the copy is kept, marked stale, and read at the next claim.
func (s *Scheduler) refresh(ctx context.Context, th *thread) {
	snap, err := s.c.Store.LoadThread(context.WithoutCancel(ctx), th.info.ID)
	if err != nil {
		th.stale = true
		return
	}
	fresh, _ := loaded(snap)
	th.history, th.carry, th.stale = fresh.history, nil, false
	th.info.Settings.Approved = fresh.info.Settings.Approved
}

// loaded builds a thread's scheduling state from a snapshot. Steered input
// no turn has read (its process stopped first) is never dropped: a paused or
// queued turn gets it in its inbox and reads it before its next model
// request (a paused one once answered); input steered into a turn that has
// ended comes back as leftover, a new turn first in the queue, which the
// caller stores.
func loaded(snap *Snapshot) (th *thread, leftover *turnRun) {
	th = &thread{info: snap.Thread}
	paused := ""
	// queued holds the ids of the input items of queued turns: input
	// steered as a turn ended is the next turn's input until that turn
	// records it, and must not come back twice.
	queued := make(map[string]bool)
	var left []llm.Item
	for i := range snap.Turns {
		rec := snap.Turns[i]
		th.turns = append(th.turns, &rec)
		var t *turnRun
		switch rec.Status {
		case TurnPaused:
			if st := pausedState(&rec); st != nil && th.active == nil {
				t = &turnRun{rec: &rec, state: st}
				th.active = t
				paused = rec.ID
			}
		case TurnQueued:
			t = &turnRun{rec: &rec, input: rec.Input}
			th.queue = append(th.queue, t)
			for _, it := range rec.Input {
				queued[it.ID] = true
			}
		}
		for _, it := range snap.Steers[rec.ID] {
			if t != nil {
				t.inbox.put(it)
			} else {
				left = append(left, it)
			}
		}
	}
	left = slices.DeleteFunc(left, func(it llm.Item) bool { return queued[it.ID] })
	if len(left) > 0 {
		leftover = &turnRun{rec: &Turn{ID: loop.NewID("turn"), ThreadID: th.info.ID, Status: TurnQueued, Input: left}, input: left}
		th.turns = append(th.turns, leftover.rec)
		th.queue = slices.Insert(th.queue, 0, leftover)
	}
	for _, it := range snap.Items {
		if paused == "" || it.TurnID != paused {
			th.history = append(th.history, it)
		}
	}
	return th, leftover
}

// Active returns the thread's active turn, running or paused waiting for an
// answer, and whether it has one. Like the other methods it loads the
// thread first, which starts a turn queued before a restart.
func (s *Scheduler) Active(ctx context.Context, threadID string) (Turn, bool, error) {
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return Turn{}, false, err
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.active == nil {
		return Turn{}, false, nil
	}
	rec := *th.active.rec
	rec.Input = slices.Clone(rec.Input)
	return rec, true, nil
}

// Subscribe returns a subscription to the events of a thread's turns from
// now on; read it with [Subscription.Next]. Close it when done.
func (s *Scheduler) Subscribe(ctx context.Context, threadID string) (*Subscription, error) {
	return s.SubscribeFunc(ctx, threadID, nil)
}

// SubscribeFunc is Subscribe for a reader of many subscriptions that would
// rather not block a goroutine on each: ready, when not nil, is called when
// events are queued on a subscription that had none queued, and once when
// it closes; the reader then takes them with [Subscription.Poll]. ready
// runs while the turn publishes its event, so it must return at once and
// must not call the scheduler or the subscription.
func (s *Scheduler) SubscribeFunc(ctx context.Context, threadID string, ready func()) (*Subscription, error) {
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return th.hub.subscribe(s.c.SubscriberBuffer, ready)
}

// Wait blocks until the turn is no longer queued or running, and returns
// its record: ended, or paused waiting for an answer.
func (s *Scheduler) Wait(ctx context.Context, threadID, turnID string) (Turn, error) {
	th, err := s.thread(ctx, threadID)
	if err != nil {
		return Turn{}, err
	}
	for {
		th.mu.Lock()
		i := slices.IndexFunc(th.turns, func(t *Turn) bool { return t.ID == turnID })
		if i < 0 {
			th.mu.Unlock()
			return Turn{}, fmt.Errorf("session: thread %q has no turn %q", threadID, turnID)
		}
		rec := *th.turns[i]
		if rec.Status != TurnQueued && rec.Status != TurnInProgress {
			th.mu.Unlock()
			return rec, nil
		}
		ch := th.waitChange()
		th.mu.Unlock()
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-ch:
		}
	}
}

// Close interrupts every running turn, waits for them to end (or for ctx),
// and closes every subscription. The scheduler cannot be used afterwards.
func (s *Scheduler) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	threads := make([]*thread, 0, len(s.threads))
	for _, th := range s.threads {
		threads = append(threads, th)
	}
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("session: close: turns still ending: %w", ctx.Err())
	}
	for _, th := range threads {
		th.hub.close()
	}
	return err
}

func cloneThread(t Thread) Thread {
	t.Settings.Approved = slices.Clone(t.Settings.Approved)
	return t
}

// emit publishes an event the scheduler itself produces (not the engine).
func (s *Scheduler) emit(th *thread, turnID string, e event.Event) {
	th.hub.Handle(s.stamp(th, turnID, e))
}

// warn tells of a write of the runtime that failed during a run (its
// trace, the thread's settings): the thread's subscribers and the
// runtime's watcher (Config.Events: a one-shot door's renderer) learn it.
func (s *Scheduler) warn(th *thread, turnID, text string) {
	e := s.stamp(th, turnID, event.Event{Type: event.Warning, Code: StopStoreError, Content: text})
	th.hub.Handle(e)
	if s.c.Events != nil {
		s.c.Events.Handle(e)
	}
}

// stamp sets what the scheduler knows of an event it produces.
func (s *Scheduler) stamp(th *thread, turnID string, e event.Event) event.Event {
	e.Time = s.c.Now()
	e.ThreadID = th.info.ID
	e.TurnID = turnID
	return e
}
