package task_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

// keptStore is the parent's journal as a session store keeps threads: it
// records what the task tool saves of a child.
type keptStore struct {
	mu      sync.Mutex
	refuse  bool
	threads map[string]record.Thread
	turns   []record.Turn // every save, in order
	items   map[string][]llm.Item
}

func (s *keptStore) Record(_ context.Context, threadID string, it llm.Item) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[string][]llm.Item{}
	}
	s.items[threadID] = append(s.items[threadID], it)
	return nil
}

func (s *keptStore) SaveThread(_ context.Context, th record.Thread) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return errors.New("disk full")
	}
	if s.threads == nil {
		s.threads = map[string]record.Thread{}
	}
	s.threads[th.ID] = th
	return nil
}

func (s *keptStore) SaveTurn(_ context.Context, t record.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, t)
	return nil
}

func TestAChildIsKeptAsAThreadLinkedToTheCallThroughItsPause(t *testing.T) {
	const prompt = "Deploy the site."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "Deployed."},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "d1", Name: "deploy", Args: map[string]any{}}}, Usage: llm.Usage{InputTokens: 100}},
			{Text: "Deployed it.", Usage: llm.Usage{InputTokens: 50}},
		}},
	)
	runs := 0
	st := &keptStore{}
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(deployTool(&runs), tk), tk), Journal: st})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th_p", Input: []llm.Item{llm.UserText("ship it")}})
	if err != nil || out.Pause == nil {
		t.Fatalf("%v %+v", err, out)
	}
	if len(st.threads) != 1 {
		t.Fatalf("%d threads kept, want the child's", len(st.threads))
	}
	var child record.Thread
	for _, th := range st.threads {
		child = th
	}
	if want := (record.Link{ThreadID: "th_p", TurnID: out.TurnID, CallID: "t1"}); child.Parent != want || child.Title != "look it up" {
		t.Errorf("child thread %+v, want linked to %+v", child, want)
	}
	if n := len(st.turns); n != 2 || st.turns[0].Status != record.StatusRunning || st.turns[1].Status != record.StatusPaused || len(st.turns[1].State) == 0 || st.turns[1].Pause == nil {
		t.Fatalf("child turn saves %+v, want running then paused with its state", st.turns)
	}
	out2, err := eng.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "t1", Decision: loop.Approve})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out2.Status != loop.StatusCompleted || runs != 1 {
		t.Fatalf("parent %s, deploy ran %d times", out2.Status, runs)
	}
	last := st.turns[len(st.turns)-1]
	if len(st.turns) != 4 || st.turns[2].Status != record.StatusRunning || last.Status != record.StatusCompleted ||
		last.ID != st.turns[0].ID || last.ThreadID != child.ID || last.Usage.InputTokens != 150 || last.Rounds != 2 || last.Answer != "Deployed it." {
		t.Errorf("child turn saves %+v, want running again, then completed with its whole turn", st.turns)
	}
	var answer bool
	for _, it := range st.items[child.ID] {
		answer = answer || (it.Role == llm.RoleAssistant && it.Text() == "Deployed it.")
	}
	if len(st.items[child.ID]) < 4 || !answer || st.items[child.ID][0].Text() != prompt {
		t.Errorf("child items %+v, want its prompt through its answer", st.items[child.ID])
	}
}

func TestAChildWhoseThreadIsRefusedStillRuns(t *testing.T) {
	const prompt = "Find it."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "Found."},
		},
		map[string][]scripted.Round{prompt: {{Text: "Here."}}},
	)
	st := &keptStore{refuse: true}
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(tk), tk), Journal: st})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th_p", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if r := resultOf(out.Items, "t1"); out.Status != loop.StatusCompleted || r == nil || r.Content != "Here." {
		t.Fatalf("parent %s, task result %+v", out.Status, r)
	}
	if len(st.turns) != 0 || len(st.items) != 1 {
		t.Errorf("a refused child thread got turns %+v and items in %d threads (want only the parent's)", st.turns, len(st.items))
	}
}
