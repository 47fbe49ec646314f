package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/session/pgstore"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/cron"
)

// The fleet's scheduled jobs are in PostgreSQL: a job one node adds is
// seen by every node, and each due run is started by one node only, however
// many schedulers look at once; a job of a missing thread is refused.
func TestAJobsDueRunIsClaimedByOneNode(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	due := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	j, err := a.AddJob(t.Context(), store.Job{Thread: "th", Name: "standup", Message: "post the standup", Every: time.Hour, Next: due})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddJob(t.Context(), store.Job{Thread: "missing", Message: "x", At: due, Next: due}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a job of a missing thread: %v, want store.ErrNotFound", err)
	}
	if got, err := b.Jobs(t.Context(), "th", false); err != nil || len(got) != 1 || got[0].ID != j.ID || got[0].Every != time.Hour || !got[0].Next.Equal(due) {
		t.Fatalf("node b lists %+v, %v; want the job node a added", got, err)
	}
	var started atomic.Int32
	var wg sync.WaitGroup
	for _, s := range []*pgstore.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := &cron.Scheduler{Queue: s, Start: func(context.Context, cron.Firing) error {
				started.Add(1)
				return nil
			}}
			sc.Tick(t.Context())
		}()
	}
	wg.Wait()
	if n := started.Load(); n != 1 {
		t.Errorf("the due run was started %d times across the nodes, want once", n)
	}
	got, err := a.Job(t.Context(), j.ID)
	if err != nil || got.Runs != 1 || !got.Next.After(due) || got.Status != store.JobActive {
		t.Errorf("after its run the job reads %+v, %v; want one run and a next one", got, err)
	}
	if err := b.CancelJob(t.Context(), "th", j.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.NextJobRun(t.Context()); err != nil || ok {
		t.Errorf("a cancelled job still has a next run (%v, %v)", ok, err)
	}
	if err := b.CancelJob(t.Context(), "th", j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelling it twice: %v, want store.ErrNotFound", err)
	}
}
