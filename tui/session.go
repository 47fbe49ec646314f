package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Session is a Backend over the session scheduler: turns run on the
// scheduler's goroutines, and threads, turns, pauses and steered input are
// kept in its store, so steered input survives the process, a thread is
// resumed where it stopped (a paused turn still waits for its answer), and
// several chats — or a chat and `rein serve` — share a thread through the
// same store. The caller owns the scheduler and closes it after the chat.
type Session struct {
	sched *session.Scheduler
	opts  SessionOptions

	mu sync.Mutex
	// opened are the threads this backend created or resumed: the
	// scheduler has them loaded, so asking whether they run is cheap and
	// changes nothing.
	opened map[string]bool
}

// SessionOptions configure a Session backend.
type SessionOptions struct {
	// Config is the configuration of the threads the chat creates: the
	// workspace, model, instructions and approval they run with, also
	// when resumed later.
	Config session.ThreadConfig
	// Threads lists threads with their titles and turn counts, most
	// recently updated first (the store's listing). Nil lists the
	// scheduler's threads, which carry neither.
	Threads func(ctx context.Context) ([]ThreadInfo, error)
}

// NewSession returns a backend that runs the chat's threads on sched.
func NewSession(sched *session.Scheduler, opts SessionOptions) *Session {
	return &Session{sched: sched, opts: opts, opened: make(map[string]bool)}
}

var _ Backend = (*Session)(nil)

// sessionErr makes the scheduler's errors match the Backend's (errors.Is),
// keeping the scheduler's own text and error.
func sessionErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var mismatch *session.TurnMismatchError
	var pause *loop.PauseMismatchError
	var match error
	switch {
	case errors.Is(err, session.ErrThreadNotFound):
		match = ErrNoThread
	case errors.Is(err, session.ErrClosed):
		match = ErrClosed
	case errors.Is(err, session.ErrNoActiveTurn):
		match = ErrNoActiveTurn
	case errors.As(err, &mismatch):
		match = ErrTurnMismatch
	case errors.Is(err, session.ErrTurnPaused):
		// The turn is not over for the chat: it waits for an answer.
		match = ErrBusy
	case errors.Is(err, loop.ErrNotPaused), errors.As(err, &pause):
		match = ErrNoPause
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w: %w", what, match, err)
}

func (b *Session) open(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opened[id] = true
}

// NewThread creates and stores a thread with the backend's Config.
func (b *Session) NewThread(ctx context.Context) (ThreadInfo, error) {
	th, err := b.sched.CreateThread(ctx, b.opts.Config)
	if err != nil {
		return ThreadInfo{}, sessionErr("new thread", err)
	}
	b.open(th.ID)
	return ThreadInfo{ID: th.ID, Created: th.Created, Updated: th.Updated, Workspace: th.Settings.Workspace, Model: th.Settings.Model}, nil
}

// Resume loads a stored thread and returns its history, the running or
// paused turn's items so far included.
func (b *Session) Resume(ctx context.Context, threadID string) (ThreadInfo, []llm.Item, error) {
	// Loaded into the scheduler first, so that a paused turn can be
	// answered and a turn queued before a restart runs.
	if _, err := b.sched.ResumeThread(ctx, threadID); err != nil {
		return ThreadInfo{}, nil, sessionErr("resume", err)
	}
	snap, err := b.sched.ReadThread(ctx, threadID)
	if err != nil {
		return ThreadInfo{}, nil, sessionErr("resume", err)
	}
	b.open(threadID)
	info := ThreadInfo{ID: threadID, Created: snap.Thread.Created, Updated: snap.Thread.Updated, Turns: len(snap.Turns),
		Workspace: snap.Thread.Settings.Workspace, Model: snap.Thread.Settings.Model}
	for _, t := range snap.Turns {
		if info.Title == "" && len(t.Input) > 0 {
			info.Title = shorten(oneLine(t.Input[0].Text()), 60)
		}
		// The tokens and cost the thread had, for its footer and /cost.
		info.Usage = info.Usage.Add(t.Usage)
		info.Cost += t.Cost
	}
	_, info.Running, _ = b.sched.Active(ctx, threadID)
	return info, snap.Items, nil
}

// Threads lists the stored threads, most recently updated first; those
// this backend opened say whether a turn of theirs is active.
func (b *Session) Threads(ctx context.Context) ([]ThreadInfo, error) {
	var out []ThreadInfo
	if b.opts.Threads != nil {
		ts, err := b.opts.Threads(ctx)
		if err != nil {
			return nil, fmt.Errorf("threads: %w", err)
		}
		out = ts
	} else {
		ts, _, err := b.sched.ListThreads(ctx, 50, "")
		if err != nil {
			return nil, sessionErr("threads", err)
		}
		for _, t := range ts {
			out = append(out, ThreadInfo{ID: t.ID, Created: t.Created, Updated: t.Updated, Workspace: t.Settings.Workspace, Model: t.Settings.Model})
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range out {
		if b.opened[out[i].ID] {
			_, out[i].Running, _ = b.sched.Active(ctx, out[i].ID)
		}
	}
	return out, nil
}

// Start runs text as a new turn; ErrBusy when a turn is active (running,
// or paused waiting for an answer).
func (b *Session) Start(ctx context.Context, threadID, text string) (string, error) {
	if t, ok, err := b.sched.Active(ctx, threadID); err != nil {
		return "", sessionErr("start", err)
	} else if ok {
		return "", fmt.Errorf("start: %w (turn %s)", ErrBusy, t.ID)
	}
	// Another client of the scheduler may start a turn in between; this
	// one is then queued after it, which is what the chat does on ErrBusy.
	t, err := b.sched.Start(ctx, threadID, llm.UserText(text))
	if err != nil {
		return "", sessionErr("start", err)
	}
	return t.ID, nil
}

// Queue runs text after the active turn, or now when the thread is idle.
// A paused turn must be answered or interrupted first (ErrBusy).
func (b *Session) Queue(ctx context.Context, threadID, text string) error {
	_, err := b.sched.Start(ctx, threadID, llm.UserText(text))
	return sessionErr("queue", err)
}

// Steer adds text to the running turn turnID. The store holds it before
// Steer returns its item's id; input that arrives as the turn ends becomes
// the next turn.
func (b *Session) Steer(ctx context.Context, threadID, turnID, text string) (string, error) {
	id, err := b.sched.Steer(ctx, threadID, turnID, llm.UserText(text))
	if err != nil {
		return "", sessionErr("steer", err)
	}
	return id, nil
}

// Interrupt cancels turn turnID: running, paused or queued. A turn that
// has ended is not an error.
func (b *Session) Interrupt(ctx context.Context, threadID, turnID string) error {
	err := b.sched.Interrupt(ctx, threadID, turnID)
	var mismatch *session.TurnMismatchError
	if errors.Is(err, session.ErrNoActiveTurn) || errors.As(err, &mismatch) {
		// Neither active nor queued: it is over already.
		return nil
	}
	return sessionErr("interrupt", err)
}

// Answer answers the pause the thread's turn waits on; the same turn goes
// on.
func (b *Session) Answer(ctx context.Context, threadID string, a loop.Answer) error {
	return sessionErr("answer call "+a.CallID, b.sched.Answer(ctx, threadID, a))
}

// Compact compacts the thread's history as a turn of its own, queued after
// an active one. Without a context window in the thread's engine options
// the turn fails and says so.
func (b *Session) Compact(ctx context.Context, threadID string) error {
	if _, ok, err := b.sched.Active(ctx, threadID); err != nil {
		return sessionErr("compact", err)
	} else if ok {
		return fmt.Errorf("compact: %w", ErrBusy)
	}
	_, err := b.sched.Compact(ctx, threadID)
	return sessionErr("compact", err)
}

// Subscribe returns the thread's events from now on. A thread with an
// active turn (another chat's, or one paused before a restart) begins with
// that turn's start and, when it is paused, its pause, so the chat can
// steer, interrupt or answer it.
func (b *Session) Subscribe(ctx context.Context, threadID string) (Subscription, error) {
	sub, err := b.sched.Subscribe(ctx, threadID)
	if err != nil {
		return nil, sessionErr("subscribe", err)
	}
	b.open(threadID)
	s := &sessionSub{sub: sub}
	// Read after subscribing: a turn that starts in between is then
	// announced twice, which the chat takes as one start, rather than not
	// at all.
	t, ok, err := b.sched.Active(ctx, threadID)
	if err != nil {
		sub.Close()
		return nil, sessionErr("subscribe", err)
	}
	if ok {
		s.first = activeEvents(threadID, t)
	}
	return s, nil
}

// activeEvents are the events that tell a new subscriber about turn t.
func activeEvents(threadID string, t session.Turn) []event.Event {
	evs := []event.Event{{Type: event.TurnStarted, Time: t.Started, ThreadID: threadID, TurnID: t.ID}}
	if p := t.Pause; t.Status == session.TurnPaused && p != nil {
		// As the engine announces a pause (loop/pause.go).
		tp := &tool.Pause{Kind: p.Kind, Intro: p.Intro, Questions: p.Questions}
		if p.Kind == tool.PauseApproval {
			tp.Payload, _ = json.Marshal(map[string]string{"tool": p.Tool, "args": p.Args})
		}
		evs = append(evs, event.Event{Type: event.PauseRequested, Time: t.Started, ThreadID: threadID, TurnID: t.ID,
			CallID: p.CallID, Name: p.Tool, Args: p.Args, Pause: tp})
	}
	return evs
}

// sessionSub is a scheduler subscription as the chat reads it.
type sessionSub struct {
	sub *session.Subscription

	mu sync.Mutex
	// first are the events that describe the active turn, handed out
	// before any other.
	first []event.Event
}

// Next returns the events waiting, blocking until there are some.
func (s *sessionSub) Next(ctx context.Context) ([]event.Event, error) {
	s.mu.Lock()
	out := s.first
	s.first = nil
	s.mu.Unlock()
	if len(out) > 0 {
		// With what is already queued behind them, without waiting.
		evs, _ := s.sub.Poll()
		return append(out, chatEvents(evs)...), nil
	}
	for {
		evs, err := s.sub.Next(ctx)
		if errors.Is(err, session.ErrClosed) {
			return nil, fmt.Errorf("%w: %w", ErrClosed, err)
		}
		if err != nil {
			return nil, err
		}
		if evs = chatEvents(evs); len(evs) > 0 {
			return evs, nil
		}
	}
}

// Close ends the subscription; a blocked Next returns.
func (s *sessionSub) Close() { s.sub.Close() }

// chatEvents drops the turn_completed of a pause: the scheduler ends the
// run there and resumes the same turn with the answer, while for the chat
// the turn goes on, waiting, as it does with the in-process backend.
func chatEvents(evs []event.Event) []event.Event {
	out := evs[:0]
	for _, e := range evs {
		if e.Type == event.TurnCompleted && e.Status == string(loop.StatusPaused) {
			continue
		}
		out = append(out, e)
	}
	return out
}
