package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
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
	th, err := s.CreateThread(context.Background(), Thread{Workspace: "/w", Model: "scripted:x"})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID
}

func record(t testing.TB, s *Store, thread string, items ...llm.Item) {
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
