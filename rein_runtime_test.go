package rein_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tools/askuser"
)

// blocking is a tool that says when it started and returns when released
// or when its call is cancelled.
func blocking(started chan<- struct{}, release <-chan struct{}) rein.Tool {
	return rein.NewTool("wait", "Wait.", func(ctx context.Context, _ struct{}) (rein.ToolOutput, error) {
		started <- struct{}{}
		select {
		case <-release:
			return rein.Text("done waiting"), nil
		case <-ctx.Done():
			return rein.ToolOutput{}, ctx.Err()
		}
	})
}

// TestThreadInterruptEndsTheRunningTurn: Interrupt from another goroutine
// ends the running turn, interrupted, and Run returns it; with no turn
// running it says so.
func TestThreadInterruptEndsTheRunningTurn(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	a, err := rein.New(rein.Options{Model: scriptedModel(t, "rounds:\n  - calls: [{id: c1, name: wait, args: {}}]\n  - text: never\n"), Tools: []rein.Tool{blocking(started, release)}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	th := a.NewThread()
	if err := th.Interrupt(t.Context()); !errors.Is(err, rein.ErrNoTurn) {
		t.Errorf("Interrupt with no turn: %v, want ErrNoTurn", err)
	}
	type result struct {
		out *rein.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := th.Run(context.Background(), "wait for it")
		done <- result{out, err}
	}()
	<-started
	if err := th.Interrupt(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.out.Status != rein.StatusInterrupted {
			t.Fatalf("outcome %+v, %v; want interrupted", r.out, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the interrupt")
	}
	if err := llm.CheckHistory(th.History()); err != nil {
		t.Errorf("history after the interrupt: %v", err)
	}
}

// TestThreadSteerReachesTheRunningTurn: text steered while a tool runs is
// in the model's next request, and in the thread's history.
func TestThreadSteerReachesTheRunningTurn(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	m, err := scripted.Parse([]byte("rounds:\n  - calls: [{id: c1, name: wait, args: {}}]\n  - text: Paris too\n"), scripted.RecordRequests())
	if err != nil {
		t.Fatal(err)
	}
	a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{blocking(started, release)}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	th := a.NewThread()
	done := make(chan error, 1)
	go func() {
		out, err := th.Run(context.Background(), "weather in Rome")
		if err == nil && out.Answer != "Paris too" {
			err = errors.New("answer " + out.Answer)
		}
		done <- err
	}()
	<-started
	if err := th.Steer(t.Context(), "and Paris"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	if !slices.ContainsFunc(last.Items, func(it llm.Item) bool { return it.Text() == "and Paris" }) {
		t.Errorf("the steered text is not in the next request")
	}
	if !slices.ContainsFunc(th.History(), func(it llm.Item) bool { return it.Text() == "and Paris" }) {
		t.Errorf("the steered text is not in the history")
	}
}

// waiter answers every pause with its text.
type waiter string

func (w waiter) Wait(_ context.Context, p rein.Pause) (rein.Answer, error) {
	return rein.Answer{Text: string(w)}, nil
}

// TestWaiterAnswersPausesInProcess: with a Waiter, a turn that asks the
// user is answered in process and Run returns it completed.
func TestWaiterAnswersPausesInProcess(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - calls: [{id: q1, name: ask_user, args: {questions: [{id: city, prompt: "Which city?"}]}}]
  - text: Florence it is.
    expect: [{result: {tool: ask_user, contains: Florence}}]
`)
	a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{askuser.New()}, Waiter: waiter("Florence")})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	out, err := a.Run(t.Context(), "plan a trip")
	if err != nil || out.Status != rein.StatusCompleted || out.Answer != "Florence it is." {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if err := m.(*scripted.Model).Verify(); err != nil {
		t.Error(err)
	}
}

// TestOpenThreadAnswersAPauseAfterARestart: with a DB, a turn paused by one
// agent is answered by another opened on the same store (a restarted
// program), and the thread's history holds both parts once.
func TestOpenThreadAnswersAPauseAfterARestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "rein.db")
	first, err := rein.New(rein.Options{DB: db, Tools: []rein.Tool{askuser.New()},
		Model: scriptedModel(t, "rounds:\n  - calls: [{id: q1, name: ask_user, args: {questions: [{id: city, prompt: \"Which city?\"}]}}]\n")})
	if err != nil {
		t.Fatal(err)
	}
	th := first.NewThread()
	out, err := th.Run(t.Context(), "plan a trip")
	if err != nil || out.Status != rein.StatusPaused || out.Pause == nil {
		t.Fatalf("outcome %+v, %v; want paused", out, err)
	}
	if err := first.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	second, err := rein.New(rein.Options{DB: db, Tools: []rein.Tool{askuser.New()}, Model: scriptedModel(t, "rounds:\n  - text: Florence it is.\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(context.Background())
	again, err := second.OpenThread(t.Context(), th.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Run(t.Context(), "something else"); !errors.Is(err, rein.ErrPaused) {
		t.Errorf("Run on the paused thread: %v, want ErrPaused", err)
	}
	if err := again.Steer(t.Context(), "something else"); !errors.Is(err, rein.ErrPaused) {
		t.Errorf("Steer on the paused thread: %v, want ErrPaused", err)
	}
	end, err := again.Answer(t.Context(), rein.Answer{TurnID: out.TurnID, CallID: out.Pause.CallID, Text: "Florence"})
	if err != nil || end.Status != rein.StatusCompleted || end.Answer != "Florence it is." {
		t.Fatalf("answered: %+v, %v", end, err)
	}
	h := again.History()
	if err := llm.CheckHistory(h); err != nil || len(h) != 4 {
		t.Fatalf("history of %d items: %v; want user, call, answer, text", len(h), err)
	}
	if _, err := second.OpenThread(t.Context(), "thread_nope"); err == nil {
		t.Error("opened a thread the store does not hold")
	}
}

// TestWorkspaceAddsReinsTools: with a Workspace the agent's turns have
// rein's file tools there besides its own; without one, its own alone.
func TestWorkspaceAddsReinsTools(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	script := `rounds:
  - calls: [{id: c1, name: read_file, args: {path: a.txt}}, {id: c2, name: echo, args: {text: hi}}]
  - text: it says alpha
    expect: [{result: {tool: read_file, contains: alpha}}, {result: {tool: echo, contains: hi}}]
`
	m := scriptedModel(t, script)
	a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{echo}, Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if out, err := a.Run(t.Context(), "read a.txt"); err != nil || out.Answer != "it says alpha" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if err := m.(*scripted.Model).Verify(); err != nil {
		t.Error(err)
	}

	rec, err := scripted.Parse([]byte("rounds:\n  - text: hi\n"), scripted.RecordRequests())
	if err != nil {
		t.Fatal(err)
	}
	bare, err := rein.New(rein.Options{Model: rec, Tools: []rein.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close(context.Background())
	if _, err := bare.Run(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, s := range rec.Requests()[0].Tools {
		offered = append(offered, s.Name)
	}
	if !slices.Equal(offered, []string{"echo"}) {
		t.Errorf("offered %v without a workspace, want [echo]", offered)
	}
}

// TestNewRefusesOptionsThatCannotRun: New says which option is wrong
// before any turn.
func TestNewRefusesOptionsThatCannotRun(t *testing.T) {
	m := scriptedModel(t, "rounds:\n  - text: hi\n")
	for _, tc := range []struct {
		name string
		o    rein.Options
		want string
	}{
		{"no model", rein.Options{}, "Model"},
		{"knowledge without a store", rein.Options{Model: m, KnowledgeBases: []string{"docs"}, Workspace: t.TempDir()}, "KnowledgeBases"},
		{"a workspace that is not there", rein.Options{Model: m, Workspace: filepath.Join(t.TempDir(), "nope")}, "workspace"},
		{"an unknown sandbox mode", rein.Options{Model: m, Sandbox: "loose"}, "sandbox"},
		{"rounds out of range", rein.Options{Model: m, MaxRounds: loop.MaxMaxRounds + 1}, "maxRounds"},
		{"a cost budget without a price", rein.Options{Model: m, Budget: rein.Budget{Cost: 1}}, "price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := rein.New(tc.o)
			if err == nil {
				a.Close(context.Background())
				t.Fatal("New took the options")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s", err, tc.want)
			}
		})
	}
}

// TestThreadKeepsATraceInMemory: without a DB a thread's runs still leave
// their trace (as every door keeps it), deltas left out.
func TestThreadKeepsATraceInMemory(t *testing.T) {
	a, err := rein.New(rein.Options{Model: scriptedModel(t, "rounds:\n  - calls: [{id: c1, name: echo, args: {text: hi}}]\n  - text: done\n"), Tools: []rein.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	th := a.NewThread()
	if _, err := th.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	trace, err := th.Trace(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range trace {
		if e.Type == rein.EventTextDelta {
			t.Errorf("the trace keeps a delta: %+v", e)
		}
		types = append(types, string(e.Type))
	}
	got := strings.Join(types, " ")
	for _, want := range []rein.EventType{rein.EventTurnStarted, rein.EventToolStarted, rein.EventResult, rein.EventTurnCompleted} {
		if !strings.Contains(got, string(want)) {
			t.Errorf("the trace lacks %s: %s", want, got)
		}
	}
	if other, _ := a.NewThread().Trace(t.Context()); len(other) != 0 {
		t.Errorf("a new thread has a trace of %d events", len(other))
	}
}

// TestOwnToolReplacesReinsOfTheSameName: a program's tool named as one of
// rein's workspace tools is the one offered and run.
func TestOwnToolReplacesReinsOfTheSameName(t *testing.T) {
	mine := rein.NewTool("read_file", "Read a file, the program's way.", func(context.Context, struct {
		Path string `json:"path"`
	}) (rein.ToolOutput, error) {
		return rein.Text("the program's own"), nil
	})
	m := scriptedModel(t, `rounds:
  - calls: [{id: c1, name: read_file, args: {path: a.txt}}]
  - text: ok
    expect: [{result: {tool: read_file, contains: "the program's own"}}]
`)
	a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{mine}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Run(t.Context(), "read"); err != nil {
		t.Fatal(err)
	}
	if err := m.(*scripted.Model).Verify(); err != nil {
		t.Error(err)
	}
}
