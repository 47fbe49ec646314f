package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// Local is a Backend that runs turns in this process on a loop.Engine:
// history carried across turns, a steer inbox, a cancel func per turn, and
// a FIFO of queued input. Threads live in memory, and also in a Keeper (the
// store) when one is given, so they can be listed and resumed later.
type Local struct {
	opts loop.Options
	keep Keeper
	// ctx is the parent of every turn: Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the turn goroutines; Close waits for them.
	wg sync.WaitGroup

	mu      sync.Mutex
	threads map[string]*localThread
	closed  bool
}

// Keeper keeps a Local backend's threads beyond the process: the thread
// store. Every item is recorded as the engine produces it (loop.Journal).
type Keeper interface {
	loop.Journal
	// CreateThread creates an empty thread.
	CreateThread(ctx context.Context) (ThreadInfo, error)
	// LoadThread loads a thread, a turn cut by a crash closed on the way.
	// An unknown id is ErrNoThread.
	LoadThread(ctx context.Context, id string) (Kept, error)
	// ListThreads lists threads, most recently updated first.
	ListThreads(ctx context.Context) ([]ThreadInfo, error)
	// StartTurn records a new running turn and returns its id.
	StartTurn(ctx context.Context, threadID string) (string, error)
	// FinishTurn records how a turn ended.
	FinishTurn(ctx context.Context, o *loop.Outcome) error
}

// Kept is a thread as a Keeper loads it.
type Kept struct {
	Info    ThreadInfo
	History []llm.Item
	// Approved are the tools approved for the whole thread.
	Approved []string
}

// localThread is one thread's state; Local.mu guards it.
type localThread struct {
	info     ThreadInfo
	engine   *loop.Engine
	history  []llm.Item
	approved []string
	running  *localTurn
	queue    []string
	inbox    *inbox
	subs     []*localSub
	// waiting holds the answer channel of the pause the running turn
	// waits on, by call id.
	waiting map[string]chan loop.Answer
	// ended is the running turn's turn_completed, held until the turn is
	// settled: a chat acting on it must find the thread idle.
	ended *event.Event
}

type localTurn struct {
	id     string
	cancel context.CancelFunc
}

// NewLocal returns a backend whose turns run with opts (the model, tools,
// budgets, policy) and whose threads keep also go to keep, when it is not
// nil. The backend sets Events, Waiter, Steer and Journal per thread;
// opts' own Events handler, if any, also sees every event.
func NewLocal(opts loop.Options, keep Keeper) (*Local, error) {
	// Fail now, not at the first turn, when the options are wrong.
	if _, err := loop.New(opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Local{opts: opts, keep: keep, ctx: ctx, cancel: cancel, threads: make(map[string]*localThread)}, nil
}

// Close interrupts every running turn, waits for them to end and ends every
// subscription.
func (m *Local) Close() error {
	m.mu.Lock()
	m.closed = true
	for _, t := range m.threads {
		t.queue = nil
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.threads {
		for _, s := range t.subs {
			s.close()
		}
		t.subs = nil
	}
	return nil
}

// NewThread creates an empty thread.
func (m *Local) NewThread(ctx context.Context) (ThreadInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ThreadInfo{}, ErrClosed
	}
	now := time.Now()
	info := ThreadInfo{ID: loop.NewID("thread"), Created: now, Updated: now}
	if m.keep != nil {
		var err error
		if info, err = m.keep.CreateThread(ctx); err != nil {
			return ThreadInfo{}, fmt.Errorf("new thread: %w", err)
		}
	}
	t, err := m.addLocked(Kept{Info: info})
	if err != nil {
		return ThreadInfo{}, err
	}
	return t.info, nil
}

// addLocked makes k a thread of this backend with its own engine; m.mu is
// held.
func (m *Local) addLocked(k Kept) (*localThread, error) {
	t := &localThread{
		info:     k.Info,
		history:  k.History,
		approved: k.Approved,
		inbox:    &inbox{},
		waiting:  make(map[string]chan loop.Answer),
	}
	o := m.opts
	o.Steer = t.inbox
	o.Waiter = &localWaiter{m: m, t: t}
	o.Events = event.Multi(m.opts.Events, event.HandlerFunc(func(e event.Event) { m.publish(t, e) }))
	if m.keep != nil {
		o.Journal = m.keep
	}
	eng, err := loop.New(o)
	if err != nil {
		return nil, fmt.Errorf("tui: thread %s: %w", k.Info.ID, err)
	}
	t.engine = eng
	m.threads[t.info.ID] = t
	return t, nil
}

// Resume returns a thread and its history: one of this process, or one
// the Keeper loads. Without a Keeper, other threads are ErrNotStored.
func (m *Local) Resume(ctx context.Context, threadID string) (ThreadInfo, []llm.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ThreadInfo{}, nil, ErrClosed
	}
	t, ok := m.threads[threadID]
	if !ok && m.keep == nil {
		return ThreadInfo{}, nil, fmt.Errorf("thread %q: %w (%w)", threadID, ErrNoThread, ErrNotStored)
	}
	if !ok {
		k, err := m.keep.LoadThread(ctx, threadID)
		if err != nil {
			return ThreadInfo{}, nil, fmt.Errorf("resume: %w", err)
		}
		if t, err = m.addLocked(k); err != nil {
			return ThreadInfo{}, nil, err
		}
	}
	return t.snapshotInfo(), slices.Clone(t.history), nil
}

// Threads lists the threads, most recently updated first: the Keeper's
// when there is one, else this process's.
func (m *Local) Threads(ctx context.Context) ([]ThreadInfo, error) {
	if m.keep != nil {
		ts, err := m.keep.ListThreads(ctx)
		if err != nil {
			return nil, fmt.Errorf("threads: %w", err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range ts {
			if t, ok := m.threads[ts[i].ID]; ok {
				ts[i].Running = t.running != nil
			}
		}
		return ts, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ThreadInfo, 0, len(m.threads))
	for _, t := range m.threads {
		out = append(out, t.snapshotInfo())
	}
	slices.SortFunc(out, func(a, b ThreadInfo) int { return b.Updated.Compare(a.Updated) })
	return out, nil
}

func (t *localThread) snapshotInfo() ThreadInfo {
	i := t.info
	i.Running = t.running != nil
	return i
}

// Start runs text as a new turn; ErrBusy when one is running.
func (m *Local) Start(ctx context.Context, threadID, text string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return "", err
	}
	if t.running != nil {
		return "", fmt.Errorf("start: %w (turn %s)", ErrBusy, t.running.id)
	}
	return m.startLocked(t, []llm.Item{llm.UserText(text)})
}

// Compact compacts the thread's history now, as a turn of its own (its
// events are a turn's). It needs a window in the engine's options:
// ErrNoCompaction otherwise.
func (m *Local) Compact(ctx context.Context, threadID string) error {
	if m.opts.Window == nil {
		return ErrNoCompaction
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return err
	}
	if t.running != nil {
		return fmt.Errorf("compact: %w (turn %s)", ErrBusy, t.running.id)
	}
	_, err = m.startLocked(t, nil)
	return err
}

// Queue runs text after the running turn, or now when the thread is idle.
func (m *Local) Queue(ctx context.Context, threadID, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return err
	}
	if t.running == nil {
		_, err := m.startLocked(t, []llm.Item{llm.UserText(text)})
		return err
	}
	t.queue = append(t.queue, text)
	return nil
}

// Steer adds text to the running turn turnID and returns its item's id.
func (m *Local) Steer(ctx context.Context, threadID, turnID, text string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return "", err
	}
	switch {
	case t.running == nil:
		return "", fmt.Errorf("steer: %w", ErrNoActiveTurn)
	case turnID != t.running.id:
		return "", fmt.Errorf("steer: %w: running %s, named %s", ErrTurnMismatch, t.running.id, turnID)
	}
	// The id is given now, so the chat can tell this steer's item when the
	// engine records it (the engine keeps an item's id).
	it := llm.Item{ID: loop.NewID("steer"), Role: llm.RoleUser, Origin: llm.OriginSteer, Parts: []llm.Part{{Kind: llm.PartText, Text: text}}}
	t.inbox.add(it)
	return it.ID, nil
}

// Interrupt cancels the running turn turnID.
func (m *Local) Interrupt(ctx context.Context, threadID, turnID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return err
	}
	if t.running == nil || t.running.id != turnID {
		// Already over: the interrupt has nothing left to do.
		return nil
	}
	t.running.cancel()
	return nil
}

// Answer delivers a to the pause waiting on a.CallID.
func (m *Local) Answer(ctx context.Context, threadID string, a loop.Answer) error {
	m.mu.Lock()
	t, err := m.thread(threadID)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	ch, ok := t.waiting[a.CallID]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("answer call %s: %w", a.CallID, ErrNoPause)
	}
	defer m.mu.Unlock()
	select {
	case ch <- a:
		return nil
	default:
		return fmt.Errorf("answer call %s: already answered: %w", a.CallID, ErrNoPause)
	}
}

// Subscribe returns the thread's events from now on.
func (m *Local) Subscribe(ctx context.Context, threadID string) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return nil, err
	}
	s := &localSub{signal: make(chan struct{}, 1)}
	s.unsubscribe = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		t.subs = slices.DeleteFunc(t.subs, func(x *localSub) bool { return x == s })
	}
	t.subs = append(t.subs, s)
	return s, nil
}

func (m *Local) thread(id string) (*localThread, error) {
	if m.closed {
		return nil, ErrClosed
	}
	t, ok := m.threads[id]
	if !ok {
		return nil, fmt.Errorf("thread %q: %w", id, ErrNoThread)
	}
	return t, nil
}

// startLocked starts a turn of input on t (a compaction when input is
// empty); m.mu is held. The turn's
// goroutine is owned by m: it ends when the engine returns, and Close
// waits for it.
func (m *Local) startLocked(t *localThread, input []llm.Item) (string, error) {
	id := loop.NewID("turn")
	if m.keep != nil {
		var err error
		if id, err = m.keep.StartTurn(m.ctx, t.info.ID); err != nil {
			return "", fmt.Errorf("start: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(m.ctx)
	turn := &localTurn{id: id, cancel: cancel}
	t.running = turn
	t.info.Turns++
	t.info.Updated = time.Now()
	if t.info.Title == "" && len(input) > 0 {
		t.info.Title = shorten(oneLine(input[0].Text()), 60)
	}
	lt := loop.Turn{ThreadID: t.info.ID, ID: turn.id, History: slices.Clone(t.history), Input: input, Approved: slices.Clone(t.approved)}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		run := t.engine.Run
		if len(lt.Input) == 0 {
			run = t.engine.Compact
		}
		o, err := run(ctx, lt)
		if o == nil {
			// The engine refused the turn before it began; say so in the
			// stream, as a turn that failed.
			o = &loop.Outcome{ThreadID: t.info.ID, TurnID: turn.id, Status: loop.StatusFailed, StopReason: loop.StopProviderError, Err: err}
			m.publish(t, event.Event{Type: event.TurnCompleted, Time: time.Now(), ThreadID: t.info.ID, TurnID: turn.id, Status: string(o.Status), Code: string(o.StopReason), Turn: o.Summary()})
		}
		m.settle(t, lt.Input, o)
	}()
	return turn.id, nil
}

// settle records a finished turn and starts what waits for the thread:
// steered input the turn did not read (never dropped), then the queue.
func (m *Local) settle(t *localThread, input []llm.Item, o *loop.Outcome) {
	if m.keep != nil {
		// Recorded even when the backend is closing: an interrupted turn
		// is a turn too.
		if err := m.keep.FinishTurn(context.WithoutCancel(m.ctx), o); err != nil {
			m.warn(t, "the turn's end was not stored: "+err.Error())
		}
	}
	if err := m.settleLocked(t, input, o); err != nil {
		m.warn(t, "the next turn did not start: "+err.Error())
	}
}

// settleLocked is settle's part under m.mu; it returns the error of
// starting the next turn.
func (m *Local) settleLocked(t *localThread, input []llm.Item, o *loop.Outcome) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(o.Items) > 0 {
		t.history = append(t.history, o.Items...)
	} else {
		t.history = append(t.history, input...)
	}
	if o.Approved != nil {
		t.approved = o.Approved
	}
	t.running = nil
	clear(t.waiting)
	t.info.Updated = time.Now()
	if e := t.ended; e != nil {
		// Published now that the thread is idle, and before the next
		// turn's events. push never blocks.
		t.ended = nil
		for _, s := range t.subs {
			s.push(*e)
		}
	}
	if m.closed {
		return nil
	}
	next := t.inbox.Drain()
	for i := range next {
		next[i].Origin = llm.OriginInput
	}
	if len(next) == 0 && len(t.queue) > 0 {
		next = []llm.Item{llm.UserText(t.queue[0])}
		t.queue = t.queue[1:]
	}
	if len(next) == 0 {
		return nil
	}
	_, err := m.startLocked(t, next)
	return err
}

// warn tells the thread's subscribers about a problem of the backend.
func (m *Local) warn(t *localThread, msg string) {
	m.publish(t, event.Event{Type: event.Warning, Time: time.Now(), ThreadID: t.info.ID, Content: msg})
}

// publish hands e to the thread's subscribers. It runs on the engine's
// goroutines and never blocks on a subscriber. A turn_completed is held
// until the turn is settled (settleLocked publishes it), so that a chat
// starting the next turn on hearing it finds the thread idle.
func (m *Local) publish(t *localThread, e event.Event) {
	if e.Item != nil {
		// The engine may replace the item in place later (a pause
		// placeholder by its answer); subscribers read their own copy.
		it := *e.Item
		e.Item = &it
	}
	m.mu.Lock()
	if e.Type == event.TurnCompleted {
		t.ended = &e
		m.mu.Unlock()
		return
	}
	if e.Type == event.PauseRequested {
		// The answer's slot exists before anyone hears of the pause, so an
		// answer quicker than the engine reaching its Waiter is kept.
		t.slot(e.CallID)
	}
	subs := slices.Clone(t.subs)
	m.mu.Unlock()
	for _, s := range subs {
		s.push(e)
	}
}

// inbox is a thread's steer inbox (loop.Inbox).
type inbox struct {
	mu    sync.Mutex
	items []llm.Item
}

func (b *inbox) add(it llm.Item) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, it)
}

// Drain returns the steered items since the last call.
func (b *inbox) Drain() []llm.Item {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.items
	b.items = nil
	return out
}

// localWaiter holds a turn at a pause until Local.Answer delivers the
// answer or the turn is interrupted.
type localWaiter struct {
	m *Local
	t *localThread
}

func (w *localWaiter) Wait(ctx context.Context, p loop.Pause) (loop.Answer, error) {
	w.m.mu.Lock()
	ch := w.t.slot(p.CallID)
	w.m.mu.Unlock()
	defer func() {
		w.m.mu.Lock()
		delete(w.t.waiting, p.CallID)
		w.m.mu.Unlock()
	}()
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return loop.Answer{}, ctx.Err()
	}
}

// slot returns the channel the answer to callID arrives on, making it when
// needed; Local.mu is held.
func (t *localThread) slot(callID string) chan loop.Answer {
	ch, ok := t.waiting[callID]
	if !ok {
		ch = make(chan loop.Answer, 1)
		t.waiting[callID] = ch
	}
	return ch
}

// localSub is a subscription with an unbounded buffer: the engine must never
// wait for the screen, and a chat's events are few enough to hold.
type localSub struct {
	mu          sync.Mutex
	buf         []event.Event
	closed      bool
	signal      chan struct{}
	unsubscribe func()
}

func (s *localSub) push(e event.Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.buf = append(s.buf, e)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Next returns the events waiting, blocking until there are some.
func (s *localSub) Next(ctx context.Context) ([]event.Event, error) {
	for {
		s.mu.Lock()
		if len(s.buf) > 0 {
			out := s.buf
			s.buf = nil
			s.mu.Unlock()
			return out, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-s.signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close ends the subscription.
func (s *localSub) Close() {
	s.close()
	s.unsubscribe()
}

func (s *localSub) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
