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

// Memory is a Backend that keeps threads in this process and runs their
// turns on a loop.Engine: history carried across turns, a steer inbox, a
// cancel func per turn, and a FIFO of queued input. It stands in for the
// session scheduler and the store; nothing outlives the process.
type Memory struct {
	opts loop.Options
	// ctx is the parent of every turn: Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the turn goroutines; Close waits for them.
	wg sync.WaitGroup

	mu      sync.Mutex
	threads map[string]*memThread
	closed  bool
	// after, when set, is called when a turn's goroutine has settled the
	// turn (tests).
	after func(threadID string, o *loop.Outcome)
}

// memThread is one thread's state; Memory.mu guards it.
type memThread struct {
	info     ThreadInfo
	engine   *loop.Engine
	history  []llm.Item
	approved []string
	running  *memTurn
	queue    []string
	inbox    *inbox
	subs     []*memSub
	// waiting holds the answer channel of the pause the running turn
	// waits on, by call id.
	waiting map[string]chan loop.Answer
}

type memTurn struct {
	id     string
	cancel context.CancelFunc
}

// NewMemory returns an in-memory backend whose turns run with opts (the
// model, tools, budgets, policy). The backend sets Events, Waiter and Steer
// per thread; opts' own Events handler, if any, also sees every event.
func NewMemory(opts loop.Options) (*Memory, error) {
	// Fail now, not at the first turn, when the options are wrong.
	if _, err := loop.New(opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Memory{opts: opts, ctx: ctx, cancel: cancel, threads: make(map[string]*memThread)}, nil
}

// Close interrupts every running turn, waits for them to end and ends every
// subscription.
func (m *Memory) Close() error {
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
func (m *Memory) NewThread(ctx context.Context) (ThreadInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ThreadInfo{}, ErrClosed
	}
	now := time.Now()
	t := &memThread{
		info:    ThreadInfo{ID: loop.NewID("thread"), Created: now, Updated: now},
		inbox:   &inbox{},
		waiting: make(map[string]chan loop.Answer),
	}
	o := m.opts
	o.Steer = t.inbox
	o.Waiter = &memWaiter{m: m, t: t}
	o.Events = event.Multi(m.opts.Events, event.HandlerFunc(func(e event.Event) { m.publish(t, e) }))
	eng, err := loop.New(o)
	if err != nil {
		return ThreadInfo{}, fmt.Errorf("tui: new thread: %w", err)
	}
	t.engine = eng
	m.threads[t.info.ID] = t
	return t.info, nil
}

// Resume returns a thread of this process and its history. Threads of
// earlier processes are not stored: that is ErrNotStored.
func (m *Memory) Resume(ctx context.Context, threadID string) (ThreadInfo, []llm.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[threadID]
	if !ok {
		return ThreadInfo{}, nil, fmt.Errorf("thread %q: %w (%w)", threadID, ErrNoThread, ErrNotStored)
	}
	return t.snapshotInfo(), slices.Clone(t.history), nil
}

// Threads lists this process's threads, most recently updated first.
func (m *Memory) Threads(ctx context.Context) ([]ThreadInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ThreadInfo, 0, len(m.threads))
	for _, t := range m.threads {
		out = append(out, t.snapshotInfo())
	}
	slices.SortFunc(out, func(a, b ThreadInfo) int { return b.Updated.Compare(a.Updated) })
	return out, nil
}

func (t *memThread) snapshotInfo() ThreadInfo {
	i := t.info
	i.Running = t.running != nil
	return i
}

// Start runs text as a new turn; ErrBusy when one is running.
func (m *Memory) Start(ctx context.Context, threadID, text string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return "", err
	}
	if t.running != nil {
		return "", fmt.Errorf("start: %w (turn %s)", ErrBusy, t.running.id)
	}
	return m.startLocked(t, []llm.Item{llm.UserText(text)}), nil
}

// Queue runs text after the running turn, or now when the thread is idle.
func (m *Memory) Queue(ctx context.Context, threadID, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return err
	}
	if t.running == nil {
		m.startLocked(t, []llm.Item{llm.UserText(text)})
		return nil
	}
	t.queue = append(t.queue, text)
	return nil
}

// Steer adds text to the running turn turnID.
func (m *Memory) Steer(ctx context.Context, threadID, turnID, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return err
	}
	switch {
	case t.running == nil:
		return fmt.Errorf("steer: %w", ErrNoActiveTurn)
	case turnID != t.running.id:
		return fmt.Errorf("steer: %w: running %s, named %s", ErrTurnMismatch, t.running.id, turnID)
	}
	t.inbox.add(llm.Item{Role: llm.RoleUser, Origin: llm.OriginSteer, Parts: []llm.Part{{Kind: llm.PartText, Text: text}}})
	return nil
}

// Interrupt cancels the running turn turnID.
func (m *Memory) Interrupt(ctx context.Context, threadID, turnID string) error {
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
func (m *Memory) Answer(ctx context.Context, threadID string, a loop.Answer) error {
	m.mu.Lock()
	t, err := m.thread(threadID)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	ch, ok := t.waiting[a.CallID]
	if ok {
		delete(t.waiting, a.CallID)
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("answer call %s: %w", a.CallID, ErrNoPause)
	}
	// The channel has room for one answer and only this call took it out
	// of waiting, so the send never blocks.
	ch <- a
	return nil
}

// Subscribe returns the thread's events from now on.
func (m *Memory) Subscribe(ctx context.Context, threadID string) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.thread(threadID)
	if err != nil {
		return nil, err
	}
	s := &memSub{signal: make(chan struct{}, 1)}
	s.unsubscribe = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		t.subs = slices.DeleteFunc(t.subs, func(x *memSub) bool { return x == s })
	}
	t.subs = append(t.subs, s)
	return s, nil
}

func (m *Memory) thread(id string) (*memThread, error) {
	if m.closed {
		return nil, ErrClosed
	}
	t, ok := m.threads[id]
	if !ok {
		return nil, fmt.Errorf("thread %q: %w", id, ErrNoThread)
	}
	return t, nil
}

// startLocked starts a turn of input on t; m.mu is held. The turn's
// goroutine is owned by m: it ends when the engine returns, and Close
// waits for it.
func (m *Memory) startLocked(t *memThread, input []llm.Item) string {
	ctx, cancel := context.WithCancel(m.ctx)
	turn := &memTurn{id: loop.NewID("turn"), cancel: cancel}
	t.running = turn
	t.info.Turns++
	t.info.Updated = time.Now()
	if t.info.Title == "" {
		t.info.Title = shorten(oneLine(input[0].Text()), 60)
	}
	lt := loop.Turn{ThreadID: t.info.ID, ID: turn.id, History: slices.Clone(t.history), Input: input, Approved: slices.Clone(t.approved)}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		o, err := t.engine.Run(ctx, lt)
		if o == nil {
			// The engine refused the turn before it began; say so in the
			// stream, as a turn that failed.
			o = &loop.Outcome{ThreadID: t.info.ID, TurnID: turn.id, Status: loop.StatusFailed, StopReason: loop.StopProviderError, Err: err}
			m.publish(t, event.Event{Type: event.TurnCompleted, Time: time.Now(), ThreadID: t.info.ID, TurnID: turn.id, Status: string(o.Status), Code: string(o.StopReason), Turn: o.Summary()})
		}
		m.settle(t, turn, lt.Input, o)
	}()
	return turn.id
}

// settle records a finished turn and starts what waits for the thread:
// steered input the turn did not read (never dropped), then the queue.
func (m *Memory) settle(t *memThread, turn *memTurn, input []llm.Item, o *loop.Outcome) {
	m.mu.Lock()
	after := m.after
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
	if !m.closed {
		if left := t.inbox.Drain(); len(left) > 0 {
			for i := range left {
				left[i].Origin = llm.OriginInput
			}
			m.startLocked(t, left)
		} else if len(t.queue) > 0 {
			next := t.queue[0]
			t.queue = t.queue[1:]
			m.startLocked(t, []llm.Item{llm.UserText(next)})
		}
	}
	m.mu.Unlock()
	if after != nil {
		after(t.info.ID, o)
	}
}

// publish hands e to the thread's subscribers. It runs on the engine's
// goroutines and never blocks on a subscriber.
func (m *Memory) publish(t *memThread, e event.Event) {
	if e.Item != nil {
		// The engine may replace the item in place later (a pause
		// placeholder by its answer); subscribers read their own copy.
		it := *e.Item
		e.Item = &it
	}
	m.mu.Lock()
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

// memWaiter holds a turn at a pause until Memory.Answer delivers the
// answer or the turn is interrupted.
type memWaiter struct {
	m *Memory
	t *memThread
}

func (w *memWaiter) Wait(ctx context.Context, p loop.Pause) (loop.Answer, error) {
	ch := make(chan loop.Answer, 1)
	w.m.mu.Lock()
	w.t.waiting[p.CallID] = ch
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

// memSub is a subscription with an unbounded buffer: the engine must never
// wait for the screen, and a chat's events are few enough to hold.
type memSub struct {
	mu          sync.Mutex
	buf         []event.Event
	closed      bool
	signal      chan struct{}
	unsubscribe func()
}

func (s *memSub) push(e event.Event) {
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
func (s *memSub) Next(ctx context.Context) ([]event.Event, error) {
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
func (s *memSub) Close() {
	s.close()
	s.unsubscribe()
}

func (s *memSub) close() {
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
