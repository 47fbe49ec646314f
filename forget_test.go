package rein

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/scripted"
)

// held counts the threads the agent's memory store holds.
func held(t *testing.T, a *Agent) int {
	t.Helper()
	ths, _, err := a.mem.ListThreads(context.Background(), 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(ths)
}

// TestAgentForgetsThreadsNoOneCanReach: an agent in memory keeps no thread
// Agent.Run is done with, nor one whose Thread values are all collected;
// one still reachable stays. Before, every thread the runtime ran stayed
// in the memory store and the scheduler for the agent's life.
func TestAgentForgetsThreadsNoOneCanReach(t *testing.T) {
	s := "rounds:\n"
	for range 12 {
		s += "  - text: hi\n"
	}
	m, err := scripted.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := t.Context()
	for range 5 {
		if _, err := a.Run(ctx, "hi"); err != nil {
			t.Fatal(err)
		}
	}
	if n := held(t, a); n != 0 {
		t.Errorf("%d threads held after Agent.Run, want 0", n)
	}
	kept := a.NewThread()
	if _, err := kept.Run(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	func() {
		for range 5 {
			th := a.NewThread()
			if _, err := th.Run(ctx, "hi"); err != nil {
				t.Fatal(err)
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for held(t, a) != 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := held(t, a); n != 1 {
		t.Errorf("%d threads held once the dropped ones were collected, want 1 (the one still reachable)", n)
	}
	if len(kept.History()) != 2 {
		t.Errorf("the reachable thread has %d items", len(kept.History()))
	}
	a.sched.Forget("") // nothing to forget: no panic
	if a.sched.Forget(kept.ID()) != true {
		t.Error("an idle thread was not forgotten")
	}
}
