package loop_test

import (
	"context"
	"encoding/json"
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

// fakeTool is a configurable tool for engine tests.
type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	return f.run(ctx, c)
}

// textTool answers every call with text.
func textTool(name, text string) *fakeTool {
	return &fakeTool{
		spec: tool.Spec{Name: name, Description: "answers " + text, Access: tool.ReadOnly},
		run: func(context.Context, tool.Call) (tool.Output, error) {
			return tool.Output{Text: text}, nil
		},
	}
}

// counterTool answers each call with a new number, so no two results match.
func counterTool(name string) *fakeTool {
	var mu sync.Mutex
	n := 0
	return &fakeTool{
		spec: tool.Spec{Name: name, Access: tool.ReadOnly},
		run: func(context.Context, tool.Call) (tool.Output, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			b, _ := json.Marshal(n)
			return tool.Output{Text: string(b)}, nil
		},
	}
}

// askTool is a pause tool in the manner of ask_user.
func askTool() *fakeTool {
	return &fakeTool{
		spec: tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true},
		run: func(_ context.Context, c tool.Call) (tool.Output, error) {
			var in struct {
				Questions []tool.Question `json:"questions"`
			}
			if err := json.Unmarshal(c.Args, &in); err != nil {
				return tool.Output{}, err
			}
			loop.QuestionIDs(in.Questions)
			return tool.Output{Text: "[awaiting user reply]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: in.Questions}}, nil
		},
	}
}

// events collects a turn's events.
type events struct {
	mu  sync.Mutex
	all []event.Event
}

func (e *events) Handle(ev event.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(t event.Type) []event.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []event.Event
	for _, ev := range e.all {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

func (e *events) warnings() []string {
	var out []string
	for _, ev := range e.of(event.Warning) {
		out = append(out, ev.Code)
	}
	return out
}

// run runs one turn of prompt with a scripted model and checks that the
// script was consumed exactly and every request kept the invariants.
func runTurn(t *testing.T, s scripted.Script, o loop.Options, prompt string) (*loop.Outcome, *scripted.Model, error) {
	t.Helper()
	m := scripted.New(s, scripted.RecordRequests())
	o.Model = m
	e, err := loop.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := e.Run(ctx, loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText(prompt)}})
	if out == nil {
		t.Fatalf("Run returned no outcome (err %v)", err)
	}
	checkInvariants(t, m)
	return out, m, err
}

func checkInvariants(t *testing.T, m *scripted.Model) {
	t.Helper()
	for i, req := range m.Requests() {
		if err := llm.CheckHistory(req.Items); err != nil {
			t.Errorf("request %d breaks the history invariants: %v", i+1, err)
		}
	}
}

func mustVerify(t *testing.T, m *scripted.Model) {
	t.Helper()
	if err := m.Verify(); err != nil {
		t.Errorf("script: %v", err)
	}
}

func call(name string, args any) scripted.Call { return scripted.Call{Name: name, Args: args} }

// handlerFunc records into ev and calls f with each event type.
func handlerFunc(f func(string), ev *events) event.Handler {
	return event.HandlerFunc(func(e event.Event) {
		ev.Handle(e)
		f(string(e.Type))
	})
}
