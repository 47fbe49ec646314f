package task_test

import (
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// TestAPausedChildsThreadResumesInTheSQLiteStore: through the SQLite
// store a session keeps, the child's thread is paused with its state while
// the parent waits, and completed once the answer resumed it.
func TestAPausedChildsThreadResumesInTheSQLiteStore(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := session.NewSQLStore(db)
	if err := st.SaveThread(t.Context(), session.Thread{ID: "th_p"}); err != nil {
		t.Fatal(err)
	}
	const prompt = "Deploy the site."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "Deployed."},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "d1", Name: "deploy", Args: map[string]any{}}}},
			{Text: "Deployed it."},
		}},
	)
	runs := 0
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(deployTool(&runs), tk), tk), Journal: st})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th_p", Input: []llm.Item{llm.UserText("ship it")}})
	if err != nil || out.Pause == nil {
		t.Fatalf("%v %+v", err, out)
	}
	kids, err := st.ListChildren(t.Context(), "th_p")
	if err != nil || len(kids) != 1 {
		t.Fatalf("children %+v, %v", kids, err)
	}
	snap, err := st.LoadThread(t.Context(), kids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 1 || snap.Turns[0].Status != session.TurnPaused || len(snap.Turns[0].State) == 0 {
		t.Fatalf("the paused child's turns: %+v", snap.Turns)
	}
	out2, err := eng.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "t1", Decision: loop.Approve})
	if err != nil || out2.Status != loop.StatusCompleted || runs != 1 {
		t.Fatalf("resumed parent %+v, %v; deploy ran %d times", out2, err, runs)
	}
	m.verify(t)
	snap, err = st.LoadThread(t.Context(), kids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 1 || snap.Turns[0].Status != session.TurnCompleted || snap.Turns[0].Answer != "Deployed it." {
		t.Errorf("the resumed child's turns: %+v", snap.Turns)
	}
	if n := len(snap.Items); n != 4 {
		t.Errorf("the child's thread holds %d items, want 4 (prompt, call, result, answer)", n)
	}
}
