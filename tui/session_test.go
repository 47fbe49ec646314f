package tui

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// sessionHarness is a Session backend over a scheduler and a SQLite store,
// playing a script, with one thread and a collector of its events.
type sessionHarness struct {
	*eventLog
	t      *testing.T
	st     *store.Store
	sched  *session.Scheduler
	be     *Session
	model  *scripted.Model
	tools  *tool.Set
	thread string
}

func newSessionHarness(t *testing.T, script string, tools ...tool.Tool) *sessionHarness {
	t.Helper()
	model, err := scripted.Parse([]byte(script), scripted.RecordRequests())
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &sessionHarness{eventLog: newEventLog(t), t: t, st: st, model: model, tools: tool.NewSet(tools...)}
	h.sched, h.be = h.open()
	th, err := h.be.NewThread(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.thread = th.ID
	stop := h.follow(h.be, th.ID)
	t.Cleanup(stop)
	return h
}

// open returns another scheduler and backend on the harness's store and
// model, as another process would have; the test's cleanup closes them.
func (h *sessionHarness) open() (*session.Scheduler, *Session) {
	h.t.Helper()
	setup := func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: h.model, Tools: h.tools, Grace: 100 * time.Millisecond}, nil, nil
	}
	sched, err := session.New(session.Config{Store: session.NewSQLStore(h.st), Setup: setup})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sched.Close(ctx); err != nil {
			h.t.Error(err)
		}
	})
	return sched, NewSession(sched, SessionOptions{})
}

func (h *sessionHarness) verify() {
	h.t.Helper()
	if err := h.model.Verify(); err != nil {
		h.t.Error(err)
	}
}

func TestSessionCarriesHistoryAcrossTurns(t *testing.T) {
	h := newSessionHarness(t, `
rounds:
  - text: Hello Ann.
    expect: [{last_user: my name is Ann}]
  - text: You are Ann.
    expect: [{last_user: who am I}]
`)
	ctx := context.Background()
	if _, err := h.be.Start(ctx, h.thread, "my name is Ann"); err != nil {
		t.Fatal(err)
	}
	h.completed(1)
	if _, err := h.be.Start(ctx, h.thread, "who am I"); err != nil {
		t.Fatal(err)
	}
	if s := h.completed(2); s.Status != "completed" || s.Answer != "You are Ann." {
		t.Fatalf("second turn = %+v", s)
	}
	h.verify()
	var sent []string
	for _, it := range h.model.Requests()[1].Items {
		sent = append(sent, it.Role.String()+":"+it.Text())
	}
	if got := strings.Join(sent, " | "); got != "user:my name is Ann | assistant:Hello Ann. | user:who am I" {
		t.Errorf("second turn's request = %s", got)
	}
	// A new backend on the store, as a later chat, resumes the thread.
	_, later := h.open()
	info, history, err := later.Resume(ctx, h.thread)
	if err != nil || len(history) != 4 {
		t.Fatalf("Resume: %d items, %v; want the 4 items of both turns", len(history), err)
	}
	if info.Turns != 2 || info.Title != "my name is Ann" || info.Running {
		t.Errorf("resumed thread = %+v", info)
	}
	ts, err := later.Threads(ctx)
	if err != nil || len(ts) != 1 || ts[0].ID != h.thread {
		t.Errorf("threads = %+v, %v", ts, err)
	}
}

func TestSessionSteerJoinsTheRunningTurn(t *testing.T) {
	gate := newGate()
	h := newSessionHarness(t, `
rounds:
  - calls: [{id: g1, name: gate}]
  - text: Going left.
    expect:
      - result: {call: g1, contains: gate opened}
      - last_user: go left instead
`, gate)
	ctx := context.Background()
	turn, err := h.be.Start(ctx, h.thread, "go right")
	if err != nil {
		t.Fatal(err)
	}
	<-gate.started
	id, err := h.be.Steer(ctx, h.thread, turn, "go left instead")
	if err != nil {
		t.Fatal(err)
	}
	// Durable before the turn reads it: the store holds it already.
	pending, err := h.st.PendingSteers(ctx, turn)
	if err != nil || len(pending) != 1 || pending[0].ID != id {
		t.Errorf("the store's pending steers = %+v, %v; want the item %s", pending, err, id)
	}
	close(gate.release)
	if s := h.completed(1); s.Status != "completed" || s.Answer != "Going left." {
		t.Fatalf("turn = %+v", s)
	}
	h.verify()
	if got := strings.Join(h.inputs(), " | "); got != ":go right | steer:go left instead" {
		t.Errorf("inputs = %s", got)
	}
	items, err := h.st.Items(ctx, h.thread)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(items, func(it llm.Item) bool { return it.ID == id && it.Origin == llm.OriginSteer }) {
		t.Errorf("the history has no steered item %s", id)
	}
}

func TestSessionRefusals(t *testing.T) {
	gate := newGate()
	h := newSessionHarness(t, `
rounds:
  - calls: [{name: gate}]
  - text: done
`, gate)
	ctx := context.Background()
	if _, err := h.be.Steer(ctx, h.thread, "turn_x", "hi"); !errors.Is(err, ErrNoActiveTurn) {
		t.Errorf("steer on an idle thread: %v, want ErrNoActiveTurn", err)
	}
	if err := h.be.Answer(ctx, h.thread, loop.Answer{TurnID: "turn_x", CallID: "c"}); !errors.Is(err, ErrNoPause) {
		t.Errorf("answer on an idle thread: %v, want ErrNoPause", err)
	}
	if _, _, err := h.be.Resume(ctx, "thread_nowhere"); !errors.Is(err, ErrNoThread) {
		t.Errorf("resume of an unknown thread: %v, want ErrNoThread", err)
	}
	if _, err := h.be.Start(ctx, h.thread, "go"); err != nil {
		t.Fatal(err)
	}
	<-gate.started
	if _, err := h.be.Steer(ctx, h.thread, "turn_x", "hi"); !errors.Is(err, ErrTurnMismatch) {
		t.Errorf("steer naming another turn: %v, want ErrTurnMismatch", err)
	}
	if _, err := h.be.Start(ctx, h.thread, "again"); !errors.Is(err, ErrBusy) {
		t.Errorf("start while running: %v, want ErrBusy", err)
	}
	if err := h.be.Compact(ctx, h.thread); !errors.Is(err, ErrBusy) {
		t.Errorf("compact while running: %v, want ErrBusy", err)
	}
	close(gate.release)
	h.completed(1)
}

const pauseScript = `
rounds:
  - calls: [{id: a1, name: ask_user, args: {questions: [{prompt: "Which city"}]}}]
  - text: Paris it is.
    expect:
      - result: {call: a1, contains: Paris}
`

var parisAnswer = []loop.QuestionAnswer{{QuestionID: "q1", Text: "Paris"}}

func TestSessionAnswersAPause(t *testing.T) {
	h := newSessionHarness(t, pauseScript, askTool{})
	ctx := context.Background()
	if _, err := h.be.Start(ctx, h.thread, "weather?"); err != nil {
		t.Fatal(err)
	}
	p := h.waitFor("pause", first(event.PauseRequested))
	if err := h.be.Answer(ctx, h.thread, loop.Answer{TurnID: p.TurnID, CallID: "nope", Text: "x"}); !errors.Is(err, ErrNoPause) {
		t.Errorf("answer to another call: %v, want ErrNoPause", err)
	}
	if _, err := h.be.Start(ctx, h.thread, "more"); !errors.Is(err, ErrBusy) {
		t.Errorf("start while paused: %v, want ErrBusy", err)
	}
	if err := h.be.Answer(ctx, h.thread, loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Answers: parisAnswer}); err != nil {
		t.Fatal(err)
	}
	// For the chat the paused turn went on: it completes once, answered.
	if s := h.completed(1); s.Status != "completed" || s.Answer != "Paris it is." {
		t.Fatalf("turn = %+v; events: %s", s, h.types())
	}
	h.verify()
}

// TestSessionResumesAPausedThread: a chat quits while its turn waits for an
// answer; a later chat on the same store finds the pause, answers it, and
// the same turn goes on.
func TestSessionResumesAPausedThread(t *testing.T) {
	h := newSessionHarness(t, pauseScript, askTool{})
	ctx := context.Background()
	turn, err := h.be.Start(ctx, h.thread, "weather?")
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("pause", first(event.PauseRequested))
	if err := h.sched.Close(ctx); err != nil {
		t.Fatal(err)
	}

	_, later := h.open()
	info, history, err := later.Resume(ctx, h.thread)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Running || len(history) == 0 {
		t.Errorf("resumed paused thread = %+v with %d items; want it running, with its items so far", info, len(history))
	}
	log := newEventLog(t)
	stop := log.follow(later, h.thread)
	defer stop()
	p := log.waitFor("the pause, told again", first(event.PauseRequested))
	if p.TurnID != turn || p.CallID != "a1" || p.Pause == nil || len(p.Pause.Questions) != 1 {
		t.Fatalf("the pause told again = %+v", p)
	}
	if s := log.waitFor("the turn, told again", first(event.TurnStarted)); s.TurnID != turn {
		t.Errorf("turn started for %s, want %s", s.TurnID, turn)
	}
	if err := later.Answer(ctx, h.thread, loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Answers: parisAnswer}); err != nil {
		t.Fatal(err)
	}
	if s := log.completed(1); s.Status != "completed" || s.Answer != "Paris it is." {
		t.Fatalf("turn = %+v", s)
	}
	h.verify()
}

// TestSessionChatsShareAThread: a second chat on the thread of a running
// turn hears of the turn, can steer it, and both chats see it end.
func TestSessionChatsShareAThread(t *testing.T) {
	gate := newGate()
	h := newSessionHarness(t, `
rounds:
  - calls: [{id: g1, name: gate}]
  - text: Both heard.
    expect:
      - last_user: from the second chat
`, gate)
	ctx := context.Background()
	turn, err := h.be.Start(ctx, h.thread, "go")
	if err != nil {
		t.Fatal(err)
	}
	<-gate.started
	other := NewSession(h.sched, SessionOptions{})
	if _, _, err := other.Resume(ctx, h.thread); err != nil {
		t.Fatal(err)
	}
	log := newEventLog(t)
	stop := log.follow(other, h.thread)
	defer stop()
	started := log.waitFor("the running turn", first(event.TurnStarted))
	if started.TurnID != turn {
		t.Fatalf("the second chat sees turn %s, want %s", started.TurnID, turn)
	}
	if _, err := other.Steer(ctx, h.thread, started.TurnID, "from the second chat"); err != nil {
		t.Fatal(err)
	}
	ts, err := other.Threads(ctx)
	if err != nil || len(ts) != 1 || !ts[0].Running {
		t.Errorf("threads while the turn runs = %+v, %v; want it running", ts, err)
	}
	close(gate.release)
	for name, l := range map[string]*eventLog{"first": h.eventLog, "second": log} {
		if s := l.completed(1); s.Answer != "Both heard." {
			t.Errorf("the %s chat's turn = %+v", name, s)
		}
	}
	h.verify()
}
