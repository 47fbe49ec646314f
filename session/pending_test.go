package session_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// countSteer returns how many stored items have id, and whether they are
// steered input.
func countSteer(t *testing.T, items []llm.Item, id string) (n int, steer bool) {
	t.Helper()
	steer = true
	for _, it := range items {
		if it.ID == id {
			n++
			steer = steer && it.Origin == llm.OriginSteer
		}
	}
	return n, steer
}

func TestSteerAcceptedBeforeAPauseIsReadAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	started, release := make(chan struct{}, 1), make(chan struct{})
	// One round runs work and ask_user; the steer arrives while work runs,
	// after the round's read, so the turn pauses holding it unread.
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}, {ID: "a1", Name: "ask_user"}}},
		{Text: "Paris, in metric", Expect: []scripted.Expect{
			{Result: &scripted.ResultExpect{Call: "a1", Contains: "Paris"}},
			{LastUser: &scripted.TextExpect{Contains: "metric"}},
		}},
	}})
	tools := []tool.Tool{gateTool("work", started, release), askTool()}

	s1, close1 := sqlScheduler(t, path, m, tools...)
	th, err := s1.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := s1.Start(t.Context(), th.ID, llm.UserText("plan a trip"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	steerID, err := s1.Steer(t.Context(), th.ID, tu.ID, llm.UserText("use metric units"))
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if got, err := s1.Wait(t.Context(), th.ID, tu.ID); err != nil || got.Status != session.TurnPaused {
		t.Fatalf("turn %+v %v, want paused", got, err)
	}
	close1()

	s2, close2 := sqlScheduler(t, path, m, tools...)
	defer close2()
	if err := s2.Answer(t.Context(), th.ID, loop.Answer{TurnID: tu.ID, CallID: "a1", Text: "Paris"}); err != nil {
		t.Fatal(err)
	}
	got, err := s2.Wait(t.Context(), th.ID, tu.ID)
	if err != nil || got.Status != session.TurnCompleted || got.Answer != "Paris, in metric" {
		t.Fatalf("turn %+v %v; want it completed, having read the steer", got, err)
	}
	snap, err := s2.ReadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n, steer := countSteer(t, snap.Items, steerID); n != 1 || !steer {
		t.Errorf("steered item %s is in the history %d times (steer origin %v), want once", steerID, n, steer)
	}
	if len(snap.Steers) != 0 {
		t.Errorf("steers still pending after the turn read them: %v", snap.Steers)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Error(err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
}

func TestSteerLeftOnAnEndedTurnBecomesTheNextTurnAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	ctx := t.Context()
	// A process accepted a steer, then its turn ended without reading it
	// and the process stopped before it could start the next turn: the
	// store has the turn ended and the steer pending.
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	sth, err := db.CreateThread(ctx, record.Thread{})
	if err != nil {
		t.Fatal(err)
	}
	thID := sth.ID
	// Claimed and ended as the scheduler does (SQLStore: ClaimTurn,
	// SaveTurn).
	first := record.Turn{ID: loop.NewID("turn"), ThreadID: thID, Status: record.StatusRunning, Started: time.Now()}
	if _, err := db.ClaimTurn(ctx, first); err != nil {
		t.Fatal(err)
	}
	for _, it := range []llm.Item{
		{ID: first.ID + ".1", TurnID: first.ID, Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "plan a trip"}}},
		{ID: first.ID + ".2", TurnID: first.ID, Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "Where to?"}}},
	} {
		if err := db.Record(ctx, thID, it); err != nil {
			t.Fatal(err)
		}
	}
	steer, err := db.AddSteer(ctx, first.ID, llm.UserText("to Lisbon, by train"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveTurn(ctx, record.Turn{ID: first.ID, ThreadID: thID, Status: record.StatusCompleted, StopReason: record.StopFinished, Answer: "Where to?", Started: first.Started, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Text: "Lisbon by train: take the night train.", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "Lisbon"}}}},
	}})
	s, closeS := sqlScheduler(t, path, m)
	if _, err := s.ResumeThread(ctx, thID); err != nil {
		t.Fatal(err)
	}
	snap, err := s.ReadThread(ctx, thID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 2 {
		t.Fatalf("stored turns %+v; want the steer as a second turn", snap.Turns)
	}
	next := snap.Turns[1]
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := s.Wait(wctx, thID, next.ID)
	if err != nil || got.Status != session.TurnCompleted {
		t.Fatalf("the steer's turn %+v %v", got, err)
	}
	closeS()

	// Opened once more, the thread has nothing left to deliver: the steer
	// was read once and is in the history once.
	m2 := scripted.New(scripted.Script{})
	s2, close2 := sqlScheduler(t, path, m2)
	defer close2()
	snap, err = s2.ReadThread(ctx, thID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.ResumeThread(ctx, thID); err != nil {
		t.Fatal(err)
	}
	if n, isSteer := countSteer(t, snap.Items, steer.ID); n != 1 || !isSteer {
		t.Errorf("steered item %s is in the history %d times (steer origin %v), want once", steer.ID, n, isSteer)
	}
	if len(snap.Steers) != 0 || len(snap.Turns) != 2 {
		t.Errorf("after the steer's turn: pending %v, %d turns; want none pending and 2 turns", snap.Steers, len(snap.Turns))
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Error(err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
}
