package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
)

// openTemp opens a store in a fresh directory, closed when the test ends.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newThread(t testing.TB, s *Store) string {
	t.Helper()
	th, err := s.CreateThread(context.Background(), record.Thread{Settings: record.Settings{Workspace: "/w", Model: "scripted:x"}})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID
}

func recordItems(t testing.TB, s *Store, thread string, items ...llm.Item) {
	t.Helper()
	for _, it := range items {
		if err := s.Record(context.Background(), thread, it); err != nil {
			t.Fatalf("record %s: %v", it.ID, err)
		}
	}
}

func withID(it llm.Item, turn, id string) llm.Item {
	it.ID, it.TurnID = id, turn
	return it
}

func user(turn, id, text string) llm.Item { return withID(llm.UserText(text), turn, id) }

func assistant(turn, id, text string, calls ...llm.Call) llm.Item {
	it := llm.Item{ID: id, TurnID: turn, Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: text}}}
	for i := range calls {
		it.Parts = append(it.Parts, llm.Part{Kind: llm.PartCall, Call: &calls[i]})
	}
	return it
}

func result(turn, id, callID, content string, status llm.ResultStatus) llm.Item {
	return withID(llm.ToolResult(llm.Result{CallID: callID, Name: "t", Content: content, Status: status}), turn, id)
}

func call(id string) llm.Call { return llm.Call{ID: id, Name: "t", Args: `{"x":1}`} }

func finished(turn string) *loop.Outcome {
	return &loop.Outcome{TurnID: turn, Status: loop.StatusCompleted, StopReason: loop.StopFinished}
}

// The store is the engine's journal: each item is committed as the engine
// produces it.
var _ loop.Journal = (*Store)(nil)

// finishOutcome records how the engine ended a turn, as a caller of the
// store does: the outcome's record and its approved tools.
func (s *Store) finishOutcome(ctx context.Context, o *loop.Outcome) error {
	rec, err := o.Record()
	if err != nil {
		return err
	}
	return s.finishTurn(ctx, rec, o.Approved)
}

// savePauseState puts a paused turn's engine state back.
func (s *Store) savePauseState(ctx context.Context, st *loop.State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return s.savePause(ctx, st.TurnID, st.Pause, b)
}

// decodeState reads an engine state the store handed back.
func decodeState(b json.RawMessage, err error) (*loop.State, error) {
	if err != nil {
		return nil, err
	}
	st := new(loop.State)
	if err := json.Unmarshal(b, st); err != nil {
		return nil, err
	}
	return st, nil
}
