package tui

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSessionQueueRunsInOrder(t *testing.T) {
	gate := newGate()
	h := newSessionHarness(t, `
rounds:
  - calls: [{name: gate}]
  - text: A done
  - text: B done
    expect: [{last_user: B}]
  - text: C done
    expect: [{last_user: C}]
`, gate)
	ctx, be, thread := context.Background(), h.be, h.thread
	if err := be.Queue(ctx, thread, "A"); err != nil {
		t.Fatal(err)
	}
	<-gate.started
	for _, s := range []string{"B", "C"} {
		if err := be.Queue(ctx, thread, s); err != nil {
			t.Fatal(err)
		}
	}
	close(gate.release)
	if s := h.completed(3); s.Answer != "C done" {
		t.Fatalf("third turn = %+v", s)
	}
	h.verify()
	if got := strings.Join(h.inputs(), " | "); got != ":A | :B | :C" {
		t.Errorf("inputs = %s", got)
	}
}

func TestSessionInterruptEndsTheTurn(t *testing.T) {
	gate := newGate()
	h := newSessionHarness(t, `
rounds:
  - calls: [{id: g1, name: gate}]
  - text: after the interrupt
    expect:
      - last_user: next
`, gate)
	ctx, be, thread := context.Background(), h.be, h.thread
	turn, err := be.Start(ctx, thread, "long job")
	if err != nil {
		t.Fatal(err)
	}
	<-gate.started
	asked := time.Now()
	if err := be.Interrupt(ctx, thread, turn); err != nil {
		t.Fatal(err)
	}
	if s := h.completed(1); s.Status != "interrupted" {
		t.Fatalf("turn = %+v", s)
	}
	if d := time.Since(asked); d > time.Second {
		t.Errorf("the interrupt took %s", d)
	}
	// The next turn starts from a history that passes the invariant
	// check (the scripted model checks every request).
	if _, err := be.Start(ctx, thread, "next"); err != nil {
		t.Fatal(err)
	}
	if s := h.completed(2); s.Status != "completed" {
		t.Fatalf("turn after the interrupt = %+v", s)
	}
	h.verify()
	if err := be.Interrupt(ctx, thread, turn); err != nil {
		t.Errorf("interrupting a finished turn: %v", err)
	}
}
