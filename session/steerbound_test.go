package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/session"
)

// TestSteersUnreadAreBoundedOnEveryStore: a client steering a turn whose
// round runs long had every input accepted (the PostgreSQL store bounded
// them, the others did not), and the turn's next request carried them all.
// The 257th unread steer is refused; once the turn reads them, steering
// works again.
func TestSteersUnreadAreBoundedOnEveryStore(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, gateTool("work", started, release))
	th, _ := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Text: "working", Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "read them"},
	}})
	tu := h.start(th, "go")
	<-started
	for i := range session.MaxPendingSteers {
		if _, err := h.s.Steer(t.Context(), th, tu.ID, llm.UserText(fmt.Sprintf("steer %d", i))); err != nil {
			t.Fatalf("steer %d: %v", i, err)
		}
	}
	_, err := h.s.Steer(t.Context(), th, tu.ID, llm.UserText("one too many"))
	if !errors.Is(err, session.ErrTooManySteers) {
		t.Fatalf("steer %d: %v, want ErrTooManySteers", session.MaxPendingSteers+1, err)
	}
	if n := len(h.store.Steers(th)); n != session.MaxPendingSteers {
		t.Errorf("the store holds %d steers, want %d (the refused one not kept)", n, session.MaxPendingSteers)
	}
	close(release)
	if got := h.wait(th, tu.ID); got.Status != session.TurnCompleted {
		t.Fatalf("turn %+v", got)
	}
}
