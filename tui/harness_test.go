package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

func TestMain(m *testing.M) {
	// A code block's highlighting (glamour's chroma) starts regexp2's
	// package clock, a goroutine of the library's own that sleeps until
	// its regexps' timeouts lapse and then ends.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
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
			out = append(out, e.Item.Origin.String()+":"+e.Item.Text())
		}
	}
	return out
}
