package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestJobsAddListCancel(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	th := newThread(t, s)
	now := time.Now().Truncate(time.Second)
	if _, err := s.AddJob(ctx, Job{Thread: "thread_nope", Message: "x", Next: now}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("job of an unknown thread: err = %v", err)
	}
	if _, err := s.AddJob(ctx, Job{Thread: th, Message: "x"}); err == nil {
		t.Fatal("a job without a next run was added")
	}
	a, err := s.AddJob(ctx, Job{Thread: th, Message: "ping", Every: 60 * time.Second, Next: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.AddJob(ctx, Job{Thread: th, Name: "daily", Message: "report", Cron: "0 9 * * *", TZ: "Europe/Paris", Next: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Job(ctx, b.ID)
	if err != nil || got.Cron != "0 9 * * *" || got.TZ != "Europe/Paris" || !got.Next.Equal(b.Next) || got.Status != JobActive {
		t.Fatalf("job = %+v, %v", got, err)
	}
	next, ok, err := s.NextJobRun(ctx)
	if err != nil || !ok || !next.Equal(a.Next) {
		t.Fatalf("next run = %v %v %v, want %v", next, ok, err, a.Next)
	}
	if err := s.CancelJob(ctx, "thread_other", a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel from another thread: err = %v", err)
	}
	if err := s.CancelJob(ctx, th, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CancelJob(ctx, th, a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second cancel: err = %v", err)
	}
	active, _ := s.Jobs(ctx, th, false)
	all, _ := s.Jobs(ctx, "", true)
	if len(active) != 1 || active[0].ID != b.ID || len(all) != 2 {
		t.Fatalf("active = %+v, all = %+v", active, all)
	}
	// Deleting the thread deletes its jobs.
	if err := s.DeleteThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Jobs(ctx, "", true); len(all) != 0 {
		t.Fatalf("jobs left after deleting the thread: %+v", all)
	}
}

func TestClaimRunHandsEachDueRunToOneCaller(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	th := newThread(t, s)
	due := time.Now().Add(-time.Minute).Truncate(time.Second)
	j, err := s.AddJob(ctx, Job{Thread: th, Message: "x", Every: time.Minute, Next: due})
	if err != nil {
		t.Fatal(err)
	}
	dues, err := s.DueJobs(ctx, time.Now())
	if err != nil || len(dues) != 1 {
		t.Fatalf("due = %+v, %v", dues, err)
	}
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.ClaimRun(ctx, j.ID, due, due.Add(time.Minute), time.Now())
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d claims won, want 1", won.Load())
	}
	got, _ := s.Job(ctx, j.ID)
	if got.Runs != 1 || !got.Next.Equal(due.Add(time.Minute)) || got.LastRun.IsZero() {
		t.Fatalf("after claim: %+v", got)
	}
	// A last run leaves the job done.
	if ok, err := s.ClaimRun(ctx, j.ID, got.Next, time.Time{}, time.Now()); !ok || err != nil {
		t.Fatalf("last claim = %v, %v", ok, err)
	}
	got, _ = s.Job(ctx, j.ID)
	if got.Status != JobDone || !got.Next.IsZero() {
		t.Fatalf("after the last run: %+v", got)
	}
	if _, ok, _ := s.NextJobRun(ctx); ok {
		t.Fatal("a done job still has a next run")
	}
}
