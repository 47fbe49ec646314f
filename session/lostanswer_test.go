package session_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// answerStore is a MemStore that keeps answers as a shared store does
// (session.AnswerStarter): the claim of an answer, and when its carrying
// out began.
type answerStore struct {
	*session.MemStore
	mu    sync.Mutex
	begun map[string]bool
}

func newAnswerStore() *answerStore {
	return &answerStore{MemStore: session.NewMemStore(), begun: make(map[string]bool)}
}

func (s *answerStore) ClaimAnswer(ctx context.Context, t session.Turn, _ loop.Answer) (session.Claim, error) {
	s.mu.Lock()
	s.begun[t.ID] = false
	s.mu.Unlock()
	return s.ClaimTurn(ctx, t)
}

func (s *answerStore) StartAnswer(_ context.Context, _, turnID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begun[turnID] = true
	return nil
}

func (s *answerStore) wasBegun(turnID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.begun[turnID]
}

// approvedTool needs approval and counts its runs; seen, when not nil, is
// called as it runs.
func approvedTool(access tool.Access, runs *atomic.Int32, seen func()) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "deploy", Access: access, NeedsApproval: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		runs.Add(1)
		if seen != nil {
			seen()
		}
		return tool.Output{Text: "deployed"}, nil
	}}
}

// pausedForApproval runs a turn on s to its approval pause of call d1.
func pausedForApproval(t *testing.T, s *session.Scheduler) (session.Thread, session.Turn) {
	t.Helper()
	th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := s.Start(t.Context(), th.ID, llm.UserText("ship it"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	paused, err := s.Wait(ctx, th.ID, tu.ID)
	if err != nil || paused.Status != session.TurnPaused {
		t.Fatalf("the turn is %s, %v; want paused for the approval", paused.Status, err)
	}
	return th, paused
}

// An approved call that changes things is marked begun in the store
// before it runs: a node taking the turn over from here knows it may have
// run.
func TestAnApprovedCallIsMarkedBegunBeforeItRuns(t *testing.T) {
	st := newAnswerStore()
	var runs atomic.Int32
	var markedFirst atomic.Bool
	var turnID atomic.Value
	turnID.Store("")
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "d1", Name: "deploy"}}}, {Text: "done"}}})
	s := node(t, st, m, approvedTool(tool.Exclusive, &runs, func() { markedFirst.Store(st.wasBegun(turnID.Load().(string))) }))
	th, paused := pausedForApproval(t, s)
	turnID.Store(paused.ID)
	if err := s.Answer(t.Context(), th.ID, loop.Answer{TurnID: paused.ID, CallID: "d1", Decision: loop.Approve}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	end, err := s.Wait(ctx, th.ID, paused.ID)
	if err != nil || end.Status != session.TurnCompleted {
		t.Fatalf("the approved turn ended %s, %v", end.Status, err)
	}
	if runs.Load() != 1 || !markedFirst.Load() {
		t.Errorf("the approved call ran %d times, marked begun before it ran: %v; want once, marked", runs.Load(), markedFirst.Load())
	}
}

// A turn taken over from a node that was lost while it ran a call the
// user approved (the store says the answer was begun) does not run the
// call again when its tool changes things: the call is answered "aborted:
// node lost" and the model decides. A call that only reads is run again,
// as the answer asked.
func TestATurnLostWhileItRanAnApprovedCallDoesNotRunItTwice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		access   tool.Access
		runs     int32
		expect   scripted.ResultExpect
		resultOf string
	}{
		{"a call that changes things is answered aborted", tool.Exclusive, 0,
			scripted.ResultExpect{Call: "d1", Contains: "node lost", Status: llm.ResultAborted}, "node lost"},
		{"a call that only reads runs again", tool.ReadOnly, 1,
			scripted.ResultExpect{Call: "d1", Equals: "deployed"}, "deployed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newAnswerStore()
			var lostRuns, runs atomic.Int32
			first := scripted.New(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "d1", Name: "deploy"}}}}})
			a := node(t, st, first, approvedTool(tc.access, &lostRuns, nil))
			th, paused := pausedForApproval(t, a)

			second := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "checked", Expect: []scripted.Expect{{Result: &tc.expect}}}}})
			b := node(t, st, second, approvedTool(tc.access, &runs, nil))
			answer := loop.Answer{TurnID: paused.ID, CallID: "d1", Decision: loop.Approve}
			// Node a claimed the answer (the turn runs again), began the
			// call and was lost.
			claimed := paused
			claimed.Status = session.TurnInProgress
			if _, err := st.ClaimAnswer(t.Context(), claimed, answer); err != nil {
				t.Fatal(err)
			}
			if err := b.Continue(t.Context(), session.Continuation{Turn: paused,
				Resume: &session.Resumption{State: paused.State, Answer: answer, Begun: true}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			end, err := b.Wait(ctx, th.ID, paused.ID)
			if err != nil || end.Status != session.TurnCompleted || end.Answer != "checked" {
				t.Fatalf("the taken-over turn ended %s %q (%s), %v; want completed", end.Status, end.Answer, end.Error, err)
			}
			verify(t, second)
			if got := runs.Load(); got != tc.runs {
				t.Errorf("the taking node ran the approved call %d times, want %d", got, tc.runs)
			}
			snap, err := st.LoadThread(t.Context(), th.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := llm.CheckHistory(snap.Items); err != nil {
				t.Error(err)
			}
			n := 0
			for _, it := range snap.Items {
				if r := it.Result(); r != nil && r.CallID == "d1" {
					n++
					if r.Status == llm.ResultPending || !strings.Contains(r.Content, tc.resultOf) {
						t.Errorf("the call's result reads %s %q, want it to say %q", r.Status, r.Content, tc.resultOf)
					}
				}
			}
			if n != 1 {
				t.Errorf("the history holds %d results of the call, want 1", n)
			}
		})
	}
}

// A turn this node already runs, handed to Continue (this node's taker
// took it from the store as the node's own queue started it), is left
// running: Continue refusing it made the taker hand the turn over, which
// ended the lease the turn runs under.
func TestContinueOfATurnRunningHereIsANoOp(t *testing.T) {
	st := session.NewMemStore()
	started, release := make(chan struct{}, 1), make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "w1", Name: "work"}}}, {Text: "done"}}})
	s := node(t, st, m, gateTool("work", started, release))
	th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := s.Start(t.Context(), th.ID, llm.UserText("work"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := s.Continue(t.Context(), session.Continuation{Turn: tu}); err != nil {
		t.Errorf("Continue of the turn running here: %v, want nil", err)
	}
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if end, err := s.Wait(ctx, th.ID, tu.ID); err != nil || end.Status != session.TurnCompleted {
		t.Errorf("the turn ended %s, %v; want completed", end.Status, err)
	}
}
