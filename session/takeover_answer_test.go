package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

// A paused turn that a node claimed with an answer (acknowledged to the
// client) and that the node never resumed is taken over with the answer:
// the taking node resumes the turn from its paused state with it, and the
// model reads the user's answer, not a lost-node abort.
func TestATakenOverTurnResumesWithTheAcknowledgedAnswer(t *testing.T) {
	st := session.NewMemStore()
	first := scripted.New(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}}}})
	a := node(t, st, first, askTool())
	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := a.Start(t.Context(), th.ID, llm.UserText("plan a trip"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	paused, err := a.Wait(ctx, th.ID, tu.ID)
	if err != nil || paused.Status != session.TurnPaused {
		t.Fatalf("the turn is %s, %v; want paused", paused.Status, err)
	}
	answer := loop.Answer{TurnID: tu.ID, CallID: "a1", Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "Paris"}}}

	second := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Text: "Paris it is", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "Paris"}}}},
	}})
	b := node(t, st, second, askTool())
	if err := b.Continue(t.Context(), session.Continuation{Turn: paused, Lost: true,
		Resume: &session.Resumption{State: paused.State, Answer: answer}}); err != nil {
		t.Fatal(err)
	}
	end, err := b.Wait(ctx, th.ID, tu.ID)
	if err != nil || end.Status != session.TurnCompleted || end.Answer != "Paris it is" {
		t.Fatalf("the taken-over turn ended %s %q, %v; want completed with the answer", end.Status, end.Answer, err)
	}
	verify(t, second)
	snap, err := st.LoadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Error(err)
	}
}

// An interrupt asked for before a node took a turn over (under the lost
// node's lease) holds: the taking node ends the turn interrupted without
// asking the model.
func TestATakenOverTurnHonoursAnEarlierInterrupt(t *testing.T) {
	st := session.NewMemStore()
	if err := st.SaveThread(t.Context(), session.Thread{ID: "th", Created: time.Now(), Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rec := session.Turn{ID: "t1", ThreadID: "th", Status: session.TurnInProgress, Started: time.Now()}
	if _, err := st.ClaimTurn(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if err := st.Record(t.Context(), "th", llm.Item{ID: "t1.1", TurnID: "t1", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "go"}}}); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "never asked"}}}, scripted.RecordRequests())
	s := node(t, st, m)
	if err := s.Continue(t.Context(), session.Continuation{Turn: rec, Lost: true, Interrupt: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	end, err := s.Wait(ctx, "th", "t1")
	if err != nil || end.Status != session.TurnInterrupted {
		t.Fatalf("the taken-over turn ended %s, %v; want interrupted", end.Status, err)
	}
	if n := len(m.Requests()); n != 0 {
		t.Errorf("the model was asked %d times after the interrupt, want never", n)
	}
}
