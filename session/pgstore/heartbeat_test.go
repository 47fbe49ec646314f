package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/session"
)

// The heartbeat renews a live lease, and forgets one another node took:
// it never renews what it lost.
func TestHeartbeatRenewsHeldLeasesOnly(t *testing.T) {
	url := servicetest.Postgres(t)
	ctx := context.Background()
	a, err := Open(ctx, Config{URL: url, Node: "a", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, Config{URL: url, Node: "b", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, th := range []string{"kept", "lost"} {
		if err := a.SaveThread(ctx, session.Thread{ID: th}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ClaimTurn(ctx, session.Turn{ID: th + ".turn", ThreadID: th, Status: session.TurnInProgress}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Both leases nearly run out; then "lost" expires and b takes it.
	if _, err := conn.Exec(ctx, `UPDATE turns SET lease_until = now() + interval '2 seconds'`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE turns SET lease_until = now() - interval '1 second' WHERE id = 'lost.turn'`); err != nil {
		t.Fatal(err)
	}
	if taken, err := b.Acquire(ctx, 5, nil); err != nil || len(taken) != 1 {
		t.Fatalf("b took %+v, %v", taken, err)
	}
	a.renew()
	var left time.Duration
	if err := conn.QueryRow(ctx, `SELECT extract(epoch FROM lease_until - now()) * interval '1 second' FROM turns WHERE id = 'kept.turn'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left < 30*time.Second {
		t.Errorf("the held lease has %v left after a renewal, want about a minute", left)
	}
	if a.fence("lost.turn") != 0 || a.fence("kept.turn") == 0 {
		t.Errorf("after the renewal a holds lost.turn under %d and kept.turn under %d; want it to forget only the lost one", a.fence("lost.turn"), a.fence("kept.turn"))
	}
	var node string
	if err := conn.QueryRow(ctx, `SELECT node FROM turns WHERE id = 'lost.turn'`).Scan(&node); err != nil || node != "b" {
		t.Errorf("lost.turn is held by %q (%v), want b: a's renewal must not take it back", node, err)
	}
}
