package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

// TestResumeKeepsTheTurnsInput: answering a paused turn (rein answer)
// claims it again, and the claim must not overwrite the input the turn
// was started with.
func TestResumeKeepsTheTurnsInput(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := newThread(t, s)
	turn := record.Turn{ID: "turn_1", ThreadID: id, Input: []llm.Item{llm.UserText("paint it")}}
	if _, err := s.ClaimTurn(ctx, turn); err != nil {
		t.Fatal(err)
	}
	p := &record.Pause{CallID: "ask1"}
	state, _ := json.Marshal(map[string]any{"pause": p})
	if err := s.savePause(ctx, turn.ID, p, state); err != nil {
		t.Fatal(err)
	}
	if _, err := s.resumeTurn(ctx, turn.ID, "ask1"); err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || len(turns[0].Input) != 1 || turns[0].Input[0].Text() != "paint it" {
		t.Fatalf("after the resume the turn's input is %+v, want the one it started with", turns)
	}
}
