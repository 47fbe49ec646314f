package session_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/session"
)

// A turn asking for a structured answer (StartOutput) queued behind a
// running turn keeps asking for it when another process starts it: the
// process that queued it stopped before the thread was free, and the one
// that opens the thread next runs the queued turn with the turn's own
// schema (stored with the turn), not as text.
func TestAQueuedTurnAsksForItsOutputInTheProcessThatStartsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	first := scripted.New(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "w1", Name: "work"}}}}})
	s1, close1 := sqlScheduler(t, path, first, gateTool("work", started, release))
	th, err := s1.CreateThread(t.Context(), session.ThreadConfig{Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Start(t.Context(), th.ID, llm.UserText("work first")); err != nil {
		t.Fatal(err)
	}
	<-started
	city := &llm.Output{Name: "city", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	queued, err := s1.StartOutput(t.Context(), th.ID, llm.UserText("where to?"), city)
	if err != nil {
		t.Fatal(err)
	}
	if queued.Status != session.TurnQueued {
		t.Fatalf("the second turn is %s, want queued behind the first", queued.Status)
	}
	close1() // the running turn ends interrupted; the queued one stays queued

	second := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: `{"city":"Paris"}`}}}, scripted.RecordRequests())
	s2, close2 := sqlScheduler(t, path, second)
	defer close2()
	if _, err := s2.ResumeThread(t.Context(), th.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s2.Wait(t.Context(), th.ID, queued.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != session.TurnCompleted || string(got.Output) != `{"city":"Paris"}` {
		t.Errorf("the queued turn ended %s with output %q (%s), want completed with the city as its structured answer", got.Status, got.Output, got.Error)
	}
	reqs := second.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was never asked")
	}
	if r := reqs[0]; r.Output == nil && r.ForceTool == "" {
		t.Errorf("the queued turn's request asked for text: no output schema, no forced tool")
	}
}
