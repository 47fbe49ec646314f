package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

// A node that hands a turn over (a drain) ends its lease at once: another
// node's taker, woken by the hand-over rather than its next poll, takes
// the turn as one to go on with, and the handing node's later writes are
// refused.
func TestHandoverWakesAnotherNodesTakerAndFencesTheOldNode(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	rec(t, a, "th", item(llm.UserText("go"), "turn", "turn.1"))

	ctx, cancel := context.WithCancel(t.Context())
	took := make(chan pgstore.Taken, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A poll far longer than the test: only the wake-up can be in
		// time.
		b.TakeTurns(ctx, time.Hour, readOnly, func(_ context.Context, tk pgstore.Taken) error {
			took <- tk
			return nil
		}, func(err error) { t.Errorf("taker: %v", err) })
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(300 * time.Millisecond) // the taker's first poll and LISTEN
	handed := time.Now()
	if err := a.Handover(t.Context(), "turn"); err != nil {
		t.Fatal(err)
	}
	select {
	case tk := <-took:
		if tk.Turn.ID != "turn" || !tk.Lost || len(tk.Items) != 1 {
			t.Errorf("b took %+v, want the handed-over turn with its item", tk)
		}
		t.Logf("taken %v after the hand-over", time.Since(handed).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("b's taker did not take the handed-over turn")
	}
	if err := a.Record(t.Context(), "th", item(llm.UserText("late"), "turn", "turn.2")); !errors.Is(err, pgstore.ErrLeaseLost) || !errors.Is(err, session.ErrLeaseLost) {
		t.Errorf("a's write after handing the turn over: %v, want ErrLeaseLost", err)
	}
	if err := a.Handover(t.Context(), "turn"); !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Errorf("handing over a turn a no longer holds: %v, want ErrLeaseLost", err)
	}
	if b.Running() != 1 || a.Running() != 0 {
		t.Errorf("a holds %d, b %d leases; want 0 and 1", a.Running(), b.Running())
	}
}

// With nodes that take over lost turns (Config.TakeOver), opening a thread
// whose running turn's lease just ended leaves the turn for them (a new
// turn is refused as busy) rather than closing it as cut; without, it is
// closed at once as before.
func TestTakeOverLeavesAnExpiredTurnForTheTakers(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute, TakeOver: true})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	rec(t, a, "th", item(llm.UserText("go"), "turn", "turn.1"))
	expire(t, url, "turn")
	snap, err := b.LoadThread(t.Context(), "th")
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.Turns[0].Status; s != session.TurnInProgress {
		t.Errorf("the expired turn is %s once the thread was opened, want left running for a taker", s)
	}
	if _, err := b.ClaimTurn(t.Context(), session.Turn{ID: "next", ThreadID: "th", Status: session.TurnInProgress}); !errors.Is(err, session.ErrTurnBusy) {
		t.Errorf("a new turn beside the expired one: %v, want ErrTurnBusy", err)
	}
	taken, err := b.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 || !taken[0].Lost {
		t.Fatalf("b took %+v, %v; want the expired turn", taken, err)
	}

	// Without TakeOver the thread's reader closes it as cut.
	newThread(t, a, "th2")
	claimTurn(t, a, "th2", "turn2")
	expire(t, url, "turn2")
	snap, err = a.LoadThread(t.Context(), "th2")
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.Turns[0].Status; s != session.TurnInterrupted {
		t.Errorf("without TakeOver the expired turn is %s, want closed as interrupted", s)
	}
}

// A taker whose poll is long still takes a lost node's turn as its lease
// ends: it sleeps until the earliest lease of another node ends.
func TestTakeTurnsWakesWhenALeaseEnds(t *testing.T) {
	url := servicetest.Postgres(t)
	a, err := pgstore.Open(t.Context(), pgstore.Config{URL: url, Node: "a", Lease: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	rec(t, a, "th", item(llm.UserText("go"), "turn", "turn.1"))

	ctx, cancel := context.WithCancel(t.Context())
	took := make(chan time.Time, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.TakeTurns(ctx, time.Hour, readOnly, func(context.Context, pgstore.Taken) error {
			took <- time.Now()
			return nil
		}, nil)
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // the taker's first poll found a live lease
	a.Close()                          // a dies: its lease runs out within 400 ms
	died := time.Now()
	select {
	case at := <-took:
		t.Logf("taken %v after the node died (lease 400ms)", at.Sub(died).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the taker slept past the end of the lost node's lease")
	}
}
