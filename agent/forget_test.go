package agent

import (
	"testing"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
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
