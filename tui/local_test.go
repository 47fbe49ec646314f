package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// gateTool runs until release is closed or its call is cancelled, and
// says on started that it runs.
type gateTool struct {
	started chan struct{}
	release chan struct{}
}

func newGate() *gateTool {
	return &gateTool{started: make(chan struct{}, 8), release: make(chan struct{})}
}

func (g *gateTool) Spec() tool.Spec { return tool.Spec{Name: "gate", Access: tool.ReadOnly} }

func (g *gateTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	g.started <- struct{}{}
	c.Partial.Write([]byte("half done\n"))
	select {
	case <-g.release:
		return tool.Output{Text: "gate opened"}, nil
	case <-ctx.Done():
		return tool.Output{}, ctx.Err()
	}
}

// askTool pauses the turn with one question, as ask_user does.
type askTool struct{}

func (askTool) Spec() tool.Spec {
	return tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true}
}

func (askTool) Run(context.Context, tool.Call) (tool.Output, error) {
	qs := []tool.Question{{Prompt: "Which city?"}}
	loop.QuestionIDs(qs)
	return tool.Output{Text: "[awaiting the user]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: qs}}, nil
}

// localHarness is a Local backend playing a script, with one thread and a
// collector of its events.
type localHarness struct {
	*eventLog
	be     *Local
	model  *scripted.Model
	thread string
}

func newLocalHarness(t *testing.T, script string, tools ...tool.Tool) *localHarness {
	t.Helper()
	model, err := scripted.Parse([]byte(script), scripted.RecordRequests())
	if err != nil {
		t.Fatal(err)
	}
	be, err := NewLocal(loop.Options{Model: model, Tools: tool.NewSet(tools...), Grace: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &localHarness{eventLog: newEventLog(t), be: be, model: model}
	th, err := be.NewThread(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.thread = th.ID
	stop := h.follow(be, th.ID)
	t.Cleanup(func() {
		be.Close()
		stop()
	})
	return h
}

// eventLog collects the events of a thread's subscription.
type eventLog struct {
	t *testing.T

	mu     sync.Mutex
	events []event.Event
	// changed is signalled after each batch of events.
	changed chan struct{}
}

func newEventLog(t *testing.T) *eventLog {
	return &eventLog{t: t, changed: make(chan struct{}, 1)}
}

// follow collects the events of the thread on be until the returned stop
// is called; stop waits for the reading goroutine to end.
func (h *eventLog) follow(be Backend, threadID string) (stop func()) {
	h.t.Helper()
	sub, err := be.Subscribe(context.Background(), threadID)
	if err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			evs, err := sub.Next(context.Background())
			if err != nil {
				return
			}
			h.mu.Lock()
			h.events = append(h.events, evs...)
			h.mu.Unlock()
			select {
			case h.changed <- struct{}{}:
			default:
			}
		}
	}()
	return func() {
		sub.Close()
		<-done
	}
}

// waitFor waits until find, given every event so far, finds one.
func (h *eventLog) waitFor(what string, find func([]event.Event) (event.Event, bool)) event.Event {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		h.mu.Lock()
		e, ok := find(h.events)
		h.mu.Unlock()
		if ok {
			return e
		}
		select {
		case <-h.changed:
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s; events: %s", what, h.types())
		}
	}
}

// first finds the first event of type t.
func first(t event.Type) func([]event.Event) (event.Event, bool) {
	return func(es []event.Event) (event.Event, bool) {
		for _, e := range es {
			if e.Type == t {
				return e, true
			}
		}
		return event.Event{}, false
	}
}

func (h *eventLog) types() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, e := range h.events {
		b.WriteString(string(e.Type) + " ")
	}
	return b.String()
}

// completed waits for the n-th completed turn and returns its summary.
func (h *eventLog) completed(n int) *event.TurnSummary {
	h.t.Helper()
	e := h.waitFor("turn completed", func(es []event.Event) (event.Event, bool) {
		seen := 0
		for _, e := range es {
			if e.Type == event.TurnCompleted {
				if seen++; seen == n {
					return e, true
				}
			}
		}
		return event.Event{}, false
	})
	return e.Turn
}

// inputs returns the user texts the engine recorded, in order, with their
// origins.
func (h *eventLog) inputs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		if e.Type == event.ItemAdded && e.Item.Role == llm.RoleUser && (e.Item.Origin == llm.OriginInput || e.Item.Origin == llm.OriginSteer) {
			out = append(out, string(e.Item.Origin)+":"+e.Item.Text())
		}
	}
	return out
}

func (h *localHarness) verify() {
	h.t.Helper()
	if err := h.model.Verify(); err != nil {
		h.t.Error(err)
	}
}

func TestLocalCarriesHistoryAcrossTurns(t *testing.T) {
	h := newLocalHarness(t, `
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
	reqs := h.model.Requests()
	var sent []string
	for _, it := range reqs[1].Items {
		sent = append(sent, string(it.Role)+":"+it.Text())
	}
	if got := strings.Join(sent, " | "); got != "user:my name is Ann | assistant:Hello Ann. | user:who am I" {
		t.Errorf("second turn's request = %s", got)
	}
	_, history, err := h.be.Resume(ctx, h.thread)
	if err != nil || len(history) != 4 {
		t.Errorf("Resume: %d items, %v; want the 4 items of both turns", len(history), err)
	}
}

func TestLocalSteerJoinsTheRunningTurn(t *testing.T) {
	gate := newGate()
	h := newLocalHarness(t, `
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
	if _, err := h.be.Steer(ctx, h.thread, turn, "go left instead"); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	if s := h.completed(1); s.Status != "completed" || s.Answer != "Going left." {
		t.Fatalf("turn = %+v", s)
	}
	h.verify()
	if got := strings.Join(h.inputs(), " | "); got != ":go right | steer:go left instead" {
		t.Errorf("inputs = %s", got)
	}
}

func TestLocalSteerIsRefusedWithoutItsTurn(t *testing.T) {
	gate := newGate()
	h := newLocalHarness(t, `
rounds:
  - calls: [{name: gate}]
  - text: done
`, gate)
	ctx := context.Background()
	if _, err := h.be.Steer(ctx, h.thread, "turn_x", "hi"); !errors.Is(err, ErrNoActiveTurn) {
		t.Errorf("steer on an idle thread: %v, want ErrNoActiveTurn", err)
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
	close(gate.release)
	h.completed(1)
}

func TestLocalAnswersAPause(t *testing.T) {
	h := newLocalHarness(t, `
rounds:
  - calls: [{id: a1, name: ask_user, args: {questions: [{prompt: "Which city"}]}}]
  - text: Paris it is.
    expect:
      - result: {call: a1, contains: Paris}
`, askTool{})
	ctx := context.Background()
	if _, err := h.be.Start(ctx, h.thread, "weather?"); err != nil {
		t.Fatal(err)
	}
	p := h.waitFor("pause", first(event.PauseRequested))
	if err := h.be.Answer(ctx, h.thread, loop.Answer{TurnID: p.TurnID, CallID: "nope", Text: "x"}); !errors.Is(err, ErrNoPause) {
		t.Errorf("answer to another call: %v, want ErrNoPause", err)
	}
	if err := h.be.Answer(ctx, h.thread, loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "Paris"}}}); err != nil {
		t.Fatal(err)
	}
	if s := h.completed(1); s.Status != "completed" || s.Answer != "Paris it is." {
		t.Fatalf("turn = %+v", s)
	}
	h.verify()
}

func TestLocalCloseInterruptsARunningTurn(t *testing.T) {
	gate := newGate()
	h := newLocalHarness(t, `
rounds:
  - calls: [{name: gate}]
`, gate)
	if _, err := h.be.Start(context.Background(), h.thread, "go"); err != nil {
		t.Fatal(err)
	}
	<-gate.started
	done := make(chan struct{})
	go func() {
		h.be.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not return while a turn ran")
	}
	if _, err := h.be.Start(context.Background(), h.thread, "more"); !errors.Is(err, ErrClosed) {
		t.Errorf("start after close: %v, want ErrClosed", err)
	}
}

func TestLocalResumeUnknownThread(t *testing.T) {
	h := newLocalHarness(t, `rounds: [{text: x}]`)
	_, _, err := h.be.Resume(context.Background(), "thread_from_yesterday")
	if !errors.Is(err, ErrNoThread) || !errors.Is(err, ErrNotStored) {
		t.Errorf("resume of an unknown thread: %v; want ErrNoThread and ErrNotStored", err)
	}
	ts, err := h.be.Threads(context.Background())
	if err != nil || len(ts) != 1 || ts[0].ID != h.thread {
		t.Errorf("threads = %+v, %v", ts, err)
	}
}

func TestLocalCompactNeedsAWindow(t *testing.T) {
	h := newLocalHarness(t, `rounds: [{text: x}]`)
	if err := h.be.Compact(context.Background(), h.thread); !errors.Is(err, ErrNoCompaction) {
		t.Errorf("compact without a window: %v, want ErrNoCompaction", err)
	}
}
