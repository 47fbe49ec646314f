package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// queueLeft stores what a node leaves when it ended a thread's turn and
// has not started the turn queued behind it yet: the turn "queued" of
// thread th, with no running turn.
func queueLeft(t *testing.T, a *pgstore.Store) {
	t.Helper()
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	if err := a.SaveTurn(t.Context(), session.Turn{ID: "queued", ThreadID: "th", Status: session.TurnQueued, Input: []llm.Item{llm.UserText("next")}}); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveTurn(t.Context(), session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnCompleted, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// taker runs b's TakeTurns with a short poll and returns what it takes.
func taker(t *testing.T, b *pgstore.Store) <-chan pgstore.Taken {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	took := make(chan pgstore.Taken, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.TakeTurns(ctx, 50*time.Millisecond, readOnly, func(_ context.Context, tk pgstore.Taken) error {
			took <- tk
			return nil
		}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return took
}

// The queued turns of a thread whose last turn a live node ended are that
// node's to start (it does as the turn ends): another node's taker leaves
// them for a lease, never racing the live node. Once the node is gone —
// it leaves (a drain), closes, or stops renewing its row (killed) — the
// other nodes take them at once, not a lease after the thread's last
// write.
func TestALostNodesQueueIsTakenOnceTheNodeIsGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(t *testing.T, url string, a *pgstore.Store)
	}{
		{"leaves", func(t *testing.T, _ string, a *pgstore.Store) {
			if err := a.Leave(t.Context()); err != nil {
				t.Fatal(err)
			}
		}},
		{"closes", func(_ *testing.T, _ string, a *pgstore.Store) { a.Close() }},
		{"is killed", func(t *testing.T, url string, _ *pgstore.Store) {
			// Its row runs out as its leases would: no renewal.
			conn, err := pgx.Connect(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(t.Context(), `UPDATE nodes SET alive_until = now() - interval '1 millisecond' WHERE node = 'a'`); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := servicetest.Postgres(t)
			// A lease far longer than the test: only the node's being
			// gone can free the queue in time.
			a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
			b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
			queueLeft(t, a)
			took := taker(t, b)
			select {
			case tk := <-took:
				t.Fatalf("b took %+v from a live node's queue", tk)
			case <-time.After(time.Second):
			}
			tc.gone(t, url, a)
			gone := time.Now()
			select {
			case tk := <-took:
				if tk.Turn.ID != "queued" || tk.Lost {
					t.Errorf("b took %+v, want the queued turn to start", tk)
				}
				t.Logf("the queued turn was taken %v after its node was gone (lease 1m)", time.Since(gone).Round(time.Millisecond))
			case <-time.After(5 * time.Second):
				t.Fatal("the gone node's queued turn was not taken within 5s (the lease is 1m)")
			}
		})
	}
}
