package loop_test

import (
	"errors"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

// An outcome's record is what a store keeps of the turn: a paused one
// carries its state as JSON that ParseState reads back and a fresh engine
// resumes from.
func TestOutcomeRecord(t *testing.T) {
	script := scripted.Script{Rounds: []scripted.Round{askRound, {Text: "Oslo it is."}}}
	m := scripted.New(script)
	tools := tool.NewSet(askTool(), textTool("weather", "40 C"))
	e1, _ := loop.New(loop.Options{Model: m, Tools: tools})
	out, err := e1.Run(t.Context(), loop.Turn{ThreadID: "th1", Input: []llm.Item{llm.UserText("weather?")}})
	if err != nil || out.Status != loop.StatusPaused {
		t.Fatalf("turn: %+v, %v", out, err)
	}
	rec, err := out.Record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != out.TurnID || rec.ThreadID != "th1" || rec.Status != record.StatusPaused || rec.StopReason != record.StopAwaitingUser ||
		rec.Pause == nil || rec.Pause.CallID != "ask1" || rec.Rounds != out.Rounds || rec.Usage != out.Usage || len(rec.State) == 0 {
		t.Fatalf("record of a paused outcome: %+v", rec)
	}
	st, err := loop.ParseState(rec.State)
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := loop.New(loop.Options{Model: m, Tools: tools})
	done, err := e2.Resume(t.Context(), st, loop.Answer{TurnID: out.TurnID, CallID: "ask1", Text: "Oslo, yes"})
	if err != nil || done.Status != loop.StatusCompleted {
		t.Fatalf("resumed from the record's state: %+v, %v", done, err)
	}
	rec, err = done.Record()
	if err != nil || rec.Status != record.StatusCompleted || rec.Answer != "Oslo it is." || rec.State != nil || rec.Pause != nil {
		t.Fatalf("record of the completed outcome: %+v, %v", rec, err)
	}

	failed := &loop.Outcome{TurnID: "turn_f", Status: loop.StatusFailed, StopReason: loop.StopProviderError, Err: errors.New("model: 500")}
	if rec, _ := failed.Record(); rec.Error != "model: 500" || rec.Status != record.StatusFailed {
		t.Fatalf("record of a failed outcome: %+v", rec)
	}
	if _, err := loop.ParseState([]byte(`{"version":`)); err == nil {
		t.Fatal("ParseState of cut JSON: no error")
	}
}
