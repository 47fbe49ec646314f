package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// funcTool is a tool made of a function.
type funcTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
}

func (f *funcTool) Spec() tool.Spec { return f.spec }
func (f *funcTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	return f.run(ctx, c)
}

// askUser pauses the turn with the questions of its arguments.
func askUser() tool.Tool {
	return &funcTool{
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

func script(t testing.TB, yaml string) *scripted.Model {
	t.Helper()
	m, err := scripted.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkingJournal records through the store, and before each result
// checks, from another connection, that the call it answers is committed.
type checkingJournal struct {
	*Store
	reader  *Store
	checked int
	errs    []string
}

func (j *checkingJournal) Record(ctx context.Context, threadID string, it llm.Item) error {
	if res := it.Result(); res != nil {
		items, err := j.reader.Items(ctx, threadID)
		if err != nil {
			return err
		}
		if len(loop.OpenCalls(items)) == 0 || !hasCall(items, res.CallID) {
			j.errs = append(j.errs, "result for "+res.CallID+" recorded before its call was committed")
		}
		j.checked++
	}
	return j.Store.Record(ctx, threadID, it)
}

func hasCall(items []llm.Item, id string) bool {
	for _, it := range items {
		for _, c := range it.Calls() {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}

// The engine's assistant item, with its calls, is committed — readable
// from another connection — before any result that answers it.
func TestCallIsCommittedBeforeItsResult(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reader, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	id := newThread(t, s)
	j := &checkingJournal{Store: s, reader: reader}
	model := script(t, `
rounds:
  - text: checking
    calls: [{id: p1, name: probe, args: {}}, {id: p2, name: probe, args: {n: 2}}]
  - text: done
`)
	probe := &funcTool{
		spec: tool.Spec{Name: "probe", Access: tool.ReadOnly},
		run: func(context.Context, tool.Call) (tool.Output, error) {
			return tool.Output{Text: "probed"}, nil
		},
	}
	eng, err := loop.New(loop.Options{Model: model, Tools: tool.NewSet(probe), Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	turn, _ := s.startTurn(ctx, id, "")
	out, err := eng.Run(ctx, loop.Turn{ThreadID: id, ID: turn.ID, Input: []llm.Item{llm.UserText("probe it")}})
	if err != nil || out.Status != loop.StatusCompleted {
		t.Fatalf("turn: %+v, %v", out, err)
	}
	if err := s.finishOutcome(ctx, out); err != nil {
		t.Fatal(err)
	}
	if j.checked != 2 || len(j.errs) > 0 {
		t.Fatalf("checked %d results (want 2): %v", j.checked, j.errs)
	}
	all, _ := reader.Items(ctx, id)
	if err := llm.CheckHistory(all); err != nil || len(all) != 5 {
		t.Fatalf("history after the turn (%d items): %v", len(all), err)
	}
}

// A turn paused by ask_user is resumed from another Store (as another
// process would, after a restart), keyed by its turn and call, and
// completes with the answer in place of the placeholder.
func TestPausedTurnResumesFromAnotherStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rein.db")
	s1, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id := newThread(t, s1)
	turn, _ := s1.startTurn(ctx, id, "")
	e1, _ := loop.New(loop.Options{Journal: s1, Tools: tool.NewSet(askUser()), Model: script(t, `
rounds:
  - calls: [{id: ask1, name: ask_user, args: {questions: [{prompt: "Which color?"}]}}]
`)})
	out, err := e1.Run(ctx, loop.Turn{ThreadID: id, ID: turn.ID, Input: []llm.Item{llm.UserText("paint it")}})
	if err != nil || out.Status != loop.StatusPaused {
		t.Fatalf("first run: %+v, %v", out, err)
	}
	if err := s1.finishOutcome(ctx, out); err != nil {
		t.Fatal(err)
	}
	s1.Close()

	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	snap, err := s2.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p := snap.Last().Pause; snap.Last().Status != loop.StatusPaused || p == nil || p.CallID != "ask1" || p.Questions[0].ID != "q1" {
		t.Fatalf("after a restart the turn is %+v", snap.Last())
	}
	st, err := decodeState(s2.LoadPause(ctx, id))
	if err != nil {
		t.Fatal(err)
	}
	var mm *loop.PauseMismatchError
	if _, err := s2.resumeTurn(ctx, st.TurnID, "other"); !errors.As(err, &mm) {
		t.Fatalf("resume for another call: %v, want *loop.PauseMismatchError", err)
	}
	st, err = decodeState(s2.resumeTurn(ctx, st.TurnID, st.Pause.CallID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.resumeTurn(ctx, st.TurnID, st.Pause.CallID); !errors.Is(err, loop.ErrNotPaused) {
		t.Fatalf("second resume: %v, want loop.ErrNotPaused", err)
	}
	e2, _ := loop.New(loop.Options{Journal: s2, Tools: tool.NewSet(askUser()), Model: script(t, `
rounds:
  - text: Painted it blue.
    expect: [{result: {call: ask1, contains: blue}}]
`)})
	out, err = e2.Resume(ctx, st, loop.Answer{TurnID: st.TurnID, CallID: "ask1", Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "blue"}}})
	if err != nil || out.Status != loop.StatusCompleted || out.Answer != "Painted it blue." {
		t.Fatalf("resumed turn: %+v, %v", out, err)
	}
	if err := s2.finishOutcome(ctx, out); err != nil {
		t.Fatal(err)
	}
	snap, _ = s2.Load(ctx, id)
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Fatal(err)
	}
	if res := snap.Items[2].Result(); res == nil || !strings.Contains(res.Content, "blue") || snap.Last().Status != loop.StatusCompleted || len(snap.Turns) != 1 {
		t.Fatalf("after the answer: items %+v, turns %+v", snap.Items, snap.Turns)
	}
	if _, err := s2.LoadPause(ctx, id); !errors.Is(err, loop.ErrNotPaused) {
		t.Fatalf("LoadPause after completion: %v, want loop.ErrNotPaused", err)
	}
}

func TestAbandonClosesAPauseUnanswered(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := newThread(t, s)
	turn, _ := s.startTurn(ctx, id, "")
	e, _ := loop.New(loop.Options{Journal: s, Tools: tool.NewSet(askUser()), Model: script(t, `
rounds:
  - calls: [{id: ask1, name: ask_user, args: {questions: [{prompt: "Which?"}]}}]
`)})
	out, _ := e.Run(ctx, loop.Turn{ThreadID: id, ID: turn.ID, Input: []llm.Item{llm.UserText("do it")}})
	if err := s.finishOutcome(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := s.Abandon(ctx, turn.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Abandon(ctx, turn.ID); !errors.Is(err, loop.ErrNotPaused) {
		t.Fatalf("abandon twice: %v, want loop.ErrNotPaused", err)
	}
	snap, _ := s.Load(ctx, id)
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Fatal(err)
	}
	if res := snap.Items[2].Result(); res.Status != llm.ResultAborted || !strings.Contains(res.Content, "moved on") {
		t.Fatalf("placeholder after abandon: %+v", res)
	}
	if snap.Last().Status != loop.StatusInterrupted || snap.Items[len(snap.Items)-1].Origin != llm.OriginMarker {
		t.Fatalf("after abandon: %+v", snap.Last())
	}
	if _, err := s.startTurn(ctx, id, ""); err != nil {
		t.Fatalf("the thread goes on: %v", err)
	}
}
