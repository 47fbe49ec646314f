package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// sqlScheduler opens the database at path and returns a scheduler whose
// threads play m; closing it closes both.
func sqlScheduler(t *testing.T, path string, m *scripted.Model, tools ...tool.Tool) (*session.Scheduler, func()) {
	t.Helper()
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.New(session.Config{Store: session.NewSQLStore(db), Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m, Tools: tool.NewSet(tools...), Grace: 100 * time.Millisecond}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestSQLStoreSteerIsStoredAndAPausedTurnResumesAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	started, release := make(chan struct{}, 1), make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}, Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "metric"}}}},
		{Text: "Paris, in metric", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "Paris"}}}},
	}})
	tools := []tool.Tool{gateTool("work", started, release), askTool()}

	// First process: the turn runs, takes a steer and pauses.
	s1, close1 := sqlScheduler(t, path, m, tools...)
	th, err := s1.CreateThread(t.Context(), session.ThreadConfig{Model: "scripted"})
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

	// Second process: the thread loads with its paused turn; the answer
	// continues the same turn.
	s2, close2 := sqlScheduler(t, path, m, tools...)
	defer close2()
	if _, err := s2.ResumeThread(t.Context(), th.ID); err != nil {
		t.Fatal(err)
	}
	if err := s2.Answer(t.Context(), th.ID, loop.Answer{TurnID: tu.ID, CallID: "a1", Text: "Paris"}); err != nil {
		t.Fatal(err)
	}
	got, err := s2.Wait(t.Context(), th.ID, tu.ID)
	if err != nil || got.Status != session.TurnCompleted || got.Answer != "Paris, in metric" {
		t.Fatalf("turn %+v %v", got, err)
	}
	snap, err := s2.ReadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(snap.Items, func(it llm.Item) bool { return it.ID == steerID && it.Origin == llm.OriginSteer }) {
		t.Errorf("the steered item %s is not in the stored history", steerID)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Error(err)
	}
	if len(snap.Turns) != 1 || snap.Turns[0].Status != session.TurnCompleted {
		t.Errorf("stored turns %+v", snap.Turns)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
	if _, err := s2.ResumeThread(t.Context(), "thread_missing"); !errors.Is(err, session.ErrThreadNotFound) {
		t.Errorf("a missing thread: %v, want ErrThreadNotFound", err)
	}
}
