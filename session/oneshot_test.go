package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// A one-shot client starts a turn and gets its record once it has ended,
// as the store holds it.
func TestRunTurnReturnsTheEndedTurn(t *testing.T) {
	h := newHarness(t)
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{{Text: "hello"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	tu, err := h.s.RunTurn(ctx, th, llm.UserText("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if tu.Status != session.TurnCompleted || tu.Answer != "hello" || tu.Ended.IsZero() {
		t.Fatalf("turn %+v, want completed with the answer", tu)
	}
	snap, err := h.store.LoadThread(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 1 || snap.Turns[0].Status != session.TurnCompleted {
		t.Fatalf("stored turns %+v", snap.Turns)
	}
	verify(t, m)
}

// A client that gives up (its context ends: Ctrl-C) interrupts the turn
// and still gets its end, recorded: the turn does not run on unwatched.
func TestRunTurnInterruptsTheTurnWhenTheCallerGivesUp(t *testing.T) {
	started := make(chan struct{}, 1)
	h := newHarness(t, slowTool(started))
	th, _ := h.thread(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "s1", Name: "slow"}}}}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	tu, err := h.s.RunTurn(ctx, th, llm.UserText("go"))
	if err != nil {
		t.Fatal(err)
	}
	if tu.Status != session.TurnInterrupted || tu.StopReason != loop.StopCancelled {
		t.Fatalf("turn %s %s, want interrupted cancelled", tu.Status, tu.StopReason)
	}
	snap, err := h.store.LoadThread(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Turns[len(snap.Turns)-1]; got.Status != session.TurnInterrupted {
		t.Fatalf("stored turn %s, want interrupted", got.Status)
	}
}

// Answering a paused turn goes on with the same turn, and the client gets
// its end.
func TestAnswerTurnGoesOnWithThePausedTurn(t *testing.T) {
	h := newHarness(t, askTool())
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}},
		{Text: "Paris it is", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "Paris"}}}},
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	paused, err := h.s.RunTurn(ctx, th, llm.UserText("plan a trip"))
	if err != nil {
		t.Fatal(err)
	}
	if paused.Status != session.TurnPaused || paused.Pause == nil {
		t.Fatalf("turn %s, want paused", paused.Status)
	}
	if _, err := h.s.AnswerTurn(ctx, th, loop.Answer{TurnID: paused.ID, CallID: "nope", Text: "Paris"}); err == nil {
		t.Fatal("an answer to another call was taken")
	}
	tu, err := h.s.AnswerTurn(ctx, th, loop.Answer{TurnID: paused.ID, CallID: paused.Pause.CallID, Text: "Paris"})
	if err != nil {
		t.Fatal(err)
	}
	if tu.ID != paused.ID || tu.Status != session.TurnCompleted || tu.Answer != "Paris it is" {
		t.Fatalf("turn %s %s %q, want %s completed", tu.ID, tu.Status, tu.Answer, paused.ID)
	}
	verify(t, m)
}

// Config.Verify fails a completed turn whose model reports a fault
// afterwards (a script with rounds left), before the end is recorded, and
// subscribers learn it; without it the same turn completes.
func TestVerifyFailsATurnWhoseModelReportsAFault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		verify bool
		want   session.TurnStatus
	}{
		{"on", true, session.TurnFailed},
		{"off", false, session.TurnCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "done"}, {Text: "never asked"}}})
			st := session.NewMemStore()
			s, err := session.New(session.Config{Store: st, Verify: tc.verify, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
				return loop.Options{Model: m, Tools: tool.NewSet()}, nil, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			th, err := s.CreateThread(ctx, session.ThreadConfig{})
			if err != nil {
				t.Fatal(err)
			}
			sub, err := s.Subscribe(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			tu, err := s.RunTurn(ctx, th.ID, llm.UserText("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if tu.Status != tc.want {
				t.Fatalf("turn %s (%s), want %s", tu.Status, tu.Error, tc.want)
			}
			if tc.verify && !strings.Contains(tu.Error, "rounds not used") {
				t.Errorf("the error %q does not say what the model found", tu.Error)
			}
			snap, err := st.LoadThread(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := snap.Turns[0].Status; got != tc.want {
				t.Errorf("stored status %s, want %s", got, tc.want)
			}
			for done := false; !done; {
				evs, err := sub.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					if e.Type == event.TurnCompleted {
						if e.Status != string(tc.want) {
							t.Errorf("turn_completed says %s, want %s", e.Status, tc.want)
						}
						done = true
					}
				}
			}
		})
	}
}
