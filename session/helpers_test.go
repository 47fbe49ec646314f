package session_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeTool is a configurable tool.
type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	return f.run(ctx, c)
}

// gateTool signals started when it runs and answers once release is closed.
func gateTool(name string, started chan<- struct{}, release <-chan struct{}) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: name, Access: tool.ReadOnly}, run: func(ctx context.Context, _ tool.Call) (tool.Output, error) {
		started <- struct{}{}
		select {
		case <-release:
			return tool.Output{Text: name + " done"}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}}
}

// slowTool writes partial output, then waits for the cancellation.
func slowTool(started chan<- struct{}) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "slow", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		io.WriteString(c.Partial, "line 1\nline 2\n")
		started <- struct{}{}
		<-ctx.Done()
		return tool.Output{}, ctx.Err()
	}}
}

// askTool pauses the turn in the manner of ask_user.
func askTool() *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		qs := []tool.Question{{Prompt: "Which city?"}}
		loop.QuestionIDs(qs)
		return tool.Output{Text: "[awaiting user reply]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: qs}}, nil
	}}
}

// harness is a scheduler over a MemStore whose threads each play their own
// scripted model.
type harness struct {
	t     *testing.T
	store *session.MemStore
	s     *session.Scheduler
	tools []tool.Tool
	grace time.Duration

	mu     sync.Mutex
	models map[string]*scripted.Model
	// hook sees every event on the engine's goroutine, before subscribers.
	hook func(event.Event)
}

func newHarness(t *testing.T, tools ...tool.Tool) *harness {
	t.Helper()
	h := &harness{t: t, store: session.NewMemStore(), tools: tools, grace: 100 * time.Millisecond, models: make(map[string]*scripted.Model)}
	s, err := session.New(session.Config{Store: h.store, Setup: h.setup, SubscriberBuffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

func (h *harness) setup(_ context.Context, th session.Thread) (loop.Options, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.models[th.ID]
	var ev event.Handler
	if hook := h.hook; hook != nil {
		ev = event.HandlerFunc(hook)
	}
	return loop.Options{Model: m, Tools: tool.NewSet(h.tools...), Grace: h.grace, Events: ev}, nil, nil
}

func (h *harness) onEvent(f func(event.Event)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hook = f
}

// thread creates a thread that plays s.
func (h *harness) thread(s scripted.Script) (string, *scripted.Model) {
	h.t.Helper()
	th, err := h.s.CreateThread(h.t.Context(), session.ThreadConfig{})
	if err != nil {
		h.t.Fatal(err)
	}
	m := scripted.New(s, scripted.RecordRequests())
	h.mu.Lock()
	h.models[th.ID] = m
	h.mu.Unlock()
	return th.ID, m
}

func (h *harness) start(thread, text string) session.Turn {
	h.t.Helper()
	tu, err := h.s.Start(h.t.Context(), thread, llm.UserText(text))
	if err != nil {
		h.t.Fatal(err)
	}
	return tu
}

func (h *harness) wait(thread, turn string) session.Turn {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 10*time.Second)
	defer cancel()
	tu, err := h.s.Wait(ctx, thread, turn)
	if err != nil {
		h.t.Fatalf("wait for %s: %v", turn, err)
	}
	return tu
}

// items returns the thread's items as the store holds them.
func (h *harness) items(thread string) []llm.Item {
	h.t.Helper()
	snap, err := h.store.LoadThread(h.t.Context(), thread)
	if err != nil {
		h.t.Fatal(err)
	}
	return snap.Items
}

func verify(t *testing.T, m *scripted.Model) {
	t.Helper()
	if err := m.Verify(); err != nil {
		t.Errorf("script: %v", err)
	}
	for i, req := range m.Requests() {
		if err := llm.CheckHistory(req.Items); err != nil {
			t.Errorf("request %d breaks the history invariants: %v", i+1, err)
		}
	}
}
