package session_test

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/session"
)

func TestSteerIsDeliveredAfterTheRoundsResults(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, gateTool("work", started, release))
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Text: "working", Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "done in metric", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "use metric units"}}}},
	}})
	tu := h.start(th, "measure it")
	<-started
	id, err := h.s.Steer(t.Context(), th, tu.ID, llm.UserText("use metric units"))
	if err != nil {
		t.Fatal(err)
	}
	// Durable acceptance: the input is in the store before the turn reads it.
	steers := h.store.Steers(th)
	if len(steers) != 1 || steers[0].ID != id || steers[0].Text() != "use metric units" {
		t.Fatalf("store steers %+v, want the accepted item %q", steers, id)
	}
	close(release)
	if got := h.wait(th, tu.ID); got.Status != session.TurnCompleted || got.Answer != "done in metric" {
		t.Fatalf("turn %+v", got)
	}
	verify(t, m)

	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	items := reqs[1].Items
	n := len(items)
	if n < 3 || items[n-3].Role != llm.RoleAssistant || items[n-2].Result() == nil || items[n-2].Result().CallID != "w1" ||
		items[n-1].ID != id || items[n-1].Origin != llm.OriginSteer {
		t.Errorf("second request ends %s, want the call, its result, then the steered item %s", describe(items), id)
	}
	// The accepted id is the history item's id.
	stored := h.items(th)
	if i := slices.IndexFunc(stored, func(it llm.Item) bool { return it.ID == id }); i < 0 || stored[i-1].Result() == nil {
		t.Errorf("store items %s: the steered item %s is missing or not after the result", describe(stored), id)
	}
}

func TestSteerAtTheFinishBoundaryContinuesTheTurn(t *testing.T) {
	h := newHarness(t)
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Text: "first answer", Chunk: 3},
		{Text: "second answer", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "also Paris"}}}},
	}})
	var steered atomic.Bool
	h.onEvent(func(e event.Event) {
		// While the finish round streams its text.
		if e.Type == event.TextDelta && steered.CompareAndSwap(false, true) {
			if _, err := h.s.Steer(t.Context(), th, e.TurnID, llm.UserText("also Paris")); err != nil {
				t.Error(err)
			}
		}
	})
	turnID := h.start(th, "capital of France?").ID
	got := h.wait(th, turnID)
	if got.Status != session.TurnCompleted || got.Answer != "second answer" || got.Rounds != 2 {
		t.Fatalf("turn %+v, want completed after a second round", got)
	}
	verify(t, m)
}

func TestSteerArrivingAsTheTurnEndsBecomesTheNextTurn(t *testing.T) {
	h := newHarness(t)
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Text: "first answer"},
		{Text: "about the steer", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "one more thing"}}}},
	}})
	var steered atomic.Bool
	steerID := make(chan string, 1)
	h.onEvent(func(e event.Event) {
		// After the engine's last read of the inbox.
		if e.Type == event.TurnCompleted && steered.CompareAndSwap(false, true) {
			id, err := h.s.Steer(t.Context(), th, e.TurnID, llm.UserText("one more thing"))
			if err != nil {
				t.Error(err)
			}
			steerID <- id
		}
	})
	turnID := h.start(th, "q").ID
	h.wait(th, turnID)
	snap, err := h.s.ReadThread(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 2 {
		t.Fatalf("%d turns, want the steer to run as a second turn", len(snap.Turns))
	}
	next := h.wait(th, snap.Turns[1].ID)
	if next.Status != session.TurnCompleted || next.Answer != "about the steer" {
		t.Fatalf("next turn %+v", next)
	}
	id := <-steerID
	if !slices.ContainsFunc(h.items(th), func(it llm.Item) bool { return it.ID == id }) {
		t.Errorf("the steered item %s is not in the history", id)
	}
	verify(t, m)
}

func TestSteerIsRejected(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, gateTool("work", started, release))
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "work"}}},
		{Text: "ok"},
	}})

	t.Run("on an idle thread", func(t *testing.T) {
		_, err := h.s.Steer(t.Context(), th, "turn_x", llm.UserText("hi"))
		if !errors.Is(err, session.ErrNoActiveTurn) {
			t.Fatalf("got %v, want ErrNoActiveTurn", err)
		}
	})
	tu := h.start(th, "go")
	<-started
	t.Run("with the wrong turn id", func(t *testing.T) {
		_, err := h.s.Steer(t.Context(), th, "turn_old", llm.UserText("hi"))
		var mm *session.TurnMismatchError
		if !errors.As(err, &mm) || mm.Expected != "turn_old" || mm.Active != tu.ID {
			t.Fatalf("got %v, want a TurnMismatchError naming %s", err, tu.ID)
		}
	})
	t.Run("when empty", func(t *testing.T) {
		_, err := h.s.Steer(t.Context(), th, tu.ID, llm.Item{})
		if !errors.Is(err, session.ErrEmptyInput) {
			t.Fatalf("got %v, want ErrEmptyInput", err)
		}
	})
	close(release)
	h.wait(th, tu.ID)
	if n := len(h.store.Steers(th)); n != 0 {
		t.Errorf("%d rejected steers were stored", n)
	}
	verify(t, m)
}

// describe lists items briefly for failure messages.
func describe(items []llm.Item) string {
	var b []byte
	for _, it := range items {
		b = append(b, '[')
		b = append(b, it.Role.String()...)
		if it.Origin != llm.OriginInput {
			b = append(b, '/')
			b = append(b, it.Origin.String()...)
		}
		if r := it.Result(); r != nil {
			b = append(b, " result "+r.CallID...)
		}
		for _, c := range it.Calls() {
			b = append(b, " call "+c.ID...)
		}
		b = append(b, ' ')
		b = append(b, it.ID...)
		b = append(b, "] "...)
	}
	return string(b)
}
