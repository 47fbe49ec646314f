package session_test

import (
	"testing"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

// TestForgetKeepsWhatIsGoingOn: Forget drops an idle thread (the store
// keeps it, and it loads again with its history), and refuses one with a
// paused turn or a subscriber, which it keeps as it was.
func TestForgetKeepsWhatIsGoingOn(t *testing.T) {
	h := newHarness(t, askTool())
	ctx := t.Context()

	idle, _ := h.thread(scripted.Script{Rounds: []scripted.Round{{Text: "one"}, {Text: "two"}}})
	h.wait(idle, h.start(idle, "first").ID)
	if !h.s.Forget(idle) {
		t.Fatal("an idle thread was kept")
	}
	if tu := h.wait(idle, h.start(idle, "second").ID); tu.Status != session.TurnCompleted {
		t.Fatalf("the forgotten thread's next turn: %s %s", tu.Status, tu.Error)
	}
	if n := len(h.items(idle)); n != 4 {
		t.Errorf("the thread reloaded holds %d items, want 4", n)
	}

	paused, _ := h.thread(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "q1", Name: "ask_user", Args: map[string]any{}}}}, {Text: "ok"}}})
	tu := h.wait(paused, h.start(paused, "ask me").ID)
	if tu.Status != session.TurnPaused {
		t.Fatalf("turn %s, want paused", tu.Status)
	}
	if h.s.Forget(paused) {
		t.Error("a thread with a paused turn was forgotten")
	}
	if err := h.s.Answer(ctx, paused, loop.Answer{TurnID: tu.ID, CallID: "q1", Text: "that"}); err != nil {
		t.Fatalf("the kept pause does not take its answer: %v", err)
	}
	h.wait(paused, tu.ID)

	watched, _ := h.thread(scripted.Script{})
	sub, err := h.s.Subscribe(ctx, watched)
	if err != nil {
		t.Fatal(err)
	}
	if h.s.Forget(watched) {
		t.Error("a thread with a subscriber was forgotten")
	}
	sub.Close()
	if !h.s.Forget(watched) {
		t.Error("the thread was kept after its subscriber left")
	}
}
