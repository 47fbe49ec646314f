package agent

import (
	"context"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

// TestForgetDropsTheThreadsModel: the model a runtime opened for a thread
// is kept for its runs until the thread is forgotten, then opened again on
// its next run; another thread's stays. Before, a runtime kept the model
// of every thread it ever ran (a library agent making a thread per
// request grew without end).
func TestForgetDropsTheThreadsModel(t *testing.T) {
	m, err := scripted.Parse([]byte("rounds:\n  - text: hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	opened := map[string]int{}
	var current string
	r := NewRuntime(RuntimeConfig{
		NoWorkspace: true, Defaults: record.Settings{Model: "scripted:x"},
		Open: func(s provider.Spec) (*provider.Resolved, error) {
			opened[current]++
			return &provider.Resolved{Spec: s, Model: m}, nil
		},
	})
	setup := func(id string) {
		t.Helper()
		current = id
		if _, _, err := r.Setup(t.Context(), record.Thread{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	setup("thread_a")
	setup("thread_b")
	setup("thread_a")
	if opened["thread_a"] != 1 || opened["thread_b"] != 1 {
		t.Fatalf("opened %v before forgetting, want each once", opened)
	}
	r.Forget("thread_a")
	r.Forget("thread_unknown")
	setup("thread_a")
	setup("thread_b")
	if opened["thread_a"] != 2 || opened["thread_b"] != 1 {
		t.Errorf("opened %v after forgetting thread_a, want it twice and thread_b once", opened)
	}
	r.mu.Lock()
	n := len(r.models)
	r.mu.Unlock()
	if n != 2 {
		t.Errorf("%d models held, want 2", n)
	}
}

// TestTheSchedulerForgettingAThreadDropsItsModel: the scheduler a runtime
// starts tells it of each thread it drops from memory (a library thread
// done with, a server's idle thread swept), so the runtime lets go of the
// thread's model too. Before, a server sweeping idle threads kept the
// model (and tool set) of every thread it swept.
func TestTheSchedulerForgettingAThreadDropsItsModel(t *testing.T) {
	m, err := scripted.Parse([]byte("rounds:\n  - text: hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRuntime(RuntimeConfig{
		NoWorkspace: true, Defaults: record.Settings{Model: "scripted:x"}, Threads: session.NewMemStore(),
		Open: func(s provider.Spec) (*provider.Resolved, error) {
			return &provider.Resolved{Spec: s, Model: m}, nil
		},
	})
	defer r.Close()
	s, err := r.Scheduler()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := s.Start(t.Context(), th.ID, llm.UserText("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if end, err := s.Wait(t.Context(), th.ID, tu.ID); err != nil || end.Status != session.TurnCompleted {
		t.Fatalf("turn: %+v, %v", end, err)
	}
	held := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.models)
	}
	if n := held(); n != 1 {
		t.Fatalf("%d models held after the turn, want 1", n)
	}
	if !s.Forget(th.ID) {
		t.Fatal("the idle thread was not forgotten")
	}
	if n := held(); n != 0 {
		t.Errorf("%d models held after the scheduler forgot the thread, want 0", n)
	}
}
