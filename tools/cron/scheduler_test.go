package cron

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
)

// starts records the firings a scheduler starts.
type starts struct {
	mu  sync.Mutex
	got []Firing
	err error
}

func (s *starts) start(_ context.Context, f Firing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, f)
	return s.err
}

func (s *starts) list() []Firing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Firing(nil), s.got...)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMissedRunsRunOnceOnStartAndAreReported(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	th := newThread(t, st)
	clk := &clock{t0}
	c := New(st, Options{Now: clk.now})
	for _, args := range []string{
		`{"action":"schedule","message":"every minute","name":"poll","every_seconds":60}`,
		`{"action":"schedule","message":"hourly","cron_expr":"0 * * * *","tz":"UTC"}`,
		`{"action":"schedule","message":"once","at":"2025-06-01T08:30:00Z"}`,
		`{"action":"schedule","message":"not yet","at":"2025-06-02T08:30:00Z"}`,
	} {
		if out := run(t, c, th, args); out.Failed {
			t.Fatal(out.Text)
		}
	}
	// The server was down from 08:00 to 11:10.
	clk.t = t0.Add(3*time.Hour + 10*time.Minute)
	var rec starts
	var missed []Firing
	s := &Scheduler{Queue: st, Start: rec.start, Now: clk.now, Logger: quiet, Missed: func(f Firing, err error) { missed = append(missed, f) }}
	fired := s.Tick(ctx)
	if len(fired) != 3 || len(rec.list()) != 3 || len(missed) != 3 {
		t.Fatalf("fired %d, started %d, reported %d; want 3 each", len(fired), len(rec.list()), len(missed))
	}
	byMsg := map[string]Firing{}
	for _, f := range fired {
		if !f.Late {
			t.Errorf("%s not marked late", f.Job.Message)
		}
		byMsg[f.Job.Message] = f
	}
	// every 60 s from 08:01: due 08:01, then 189 more runs up to 11:10.
	if f := byMsg["every minute"]; f.Skipped != 189 || !strings.Contains(f.Message(), "in place of 189 more missed runs") || !strings.Contains(f.Message(), `"poll"`) {
		t.Errorf("every minute: skipped %d, message %q", f.Skipped, f.Message())
	}
	if f := byMsg["hourly"]; f.Skipped != 2 || !f.Due.Equal(t0.Add(time.Hour)) {
		t.Errorf("hourly: due %v, skipped %d", f.Due, f.Skipped)
	}
	if f := byMsg["once"]; f.Skipped != 0 || !strings.HasSuffix(f.Message(), "\nonce") {
		t.Errorf("once: %+v %q", f, f.Message())
	}
	// What is left: the repeating jobs moved past now, keeping their phase;
	// the one-off done.
	jobs, _ := st.Jobs(ctx, th, true)
	for _, j := range jobs {
		switch j.Message {
		case "every minute":
			if !j.Next.Equal(t0.Add(3*time.Hour+11*time.Minute)) || j.Runs != 1 {
				t.Errorf("every minute: next %v, runs %d", j.Next, j.Runs)
			}
		case "hourly":
			if !j.Next.Equal(t0.Add(4 * time.Hour)) {
				t.Errorf("hourly: next %v", j.Next)
			}
		case "once":
			if j.Status != store.JobDone {
				t.Errorf("once: %s", j.Status)
			}
		case "not yet":
			if j.Runs != 0 || j.Status != store.JobActive {
				t.Errorf("not yet: %+v", j)
			}
		}
	}
	// Nothing is due again at the same instant.
	if again := s.Tick(ctx); len(again) != 0 {
		t.Fatalf("fired again: %+v", again)
	}
	// On time, a run is not late and not reported.
	clk.t = t0.Add(3*time.Hour + 11*time.Minute)
	missed = nil
	fired = s.Tick(ctx)
	if len(fired) != 1 || fired[0].Late || len(missed) != 0 || strings.Contains(fired[0].Message(), "late") {
		t.Fatalf("on-time run: %+v, reported %d", fired, len(missed))
	}
}

func TestTwoSchedulersStartEachRunOnce(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	th := newThread(t, st)
	clk := &clock{t0}
	c := New(st, Options{Now: clk.now})
	for range 5 {
		run(t, c, th, `{"action":"schedule","message":"m","every_seconds":60}`)
	}
	clk.t = t0.Add(61 * time.Second)
	var rec starts
	var wg sync.WaitGroup
	for range 2 {
		s := &Scheduler{Queue: st, Start: rec.start, Now: clk.now, Logger: quiet}
		wg.Go(func() { s.Tick(ctx) })
	}
	wg.Wait()
	if n := len(rec.list()); n != 5 {
		t.Fatalf("%d runs started, want 5", n)
	}
}

func TestAFailedStartIsNotRetried(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	th := newThread(t, st)
	clk := &clock{t0}
	run(t, New(st, Options{Now: clk.now}), th, `{"action":"schedule","message":"m","at":"2025-06-01T08:00:30Z"}`)
	clk.t = t0.Add(45 * time.Second)
	rec := starts{err: errors.New("thread busy")}
	s := &Scheduler{Queue: st, Start: rec.start, Now: clk.now, Logger: quiet}
	s.Tick(ctx)
	s.Tick(ctx)
	if n := len(rec.list()); n != 1 {
		t.Fatalf("started %d times, want 1", n)
	}
}

func TestRunStartsJobsAsTheyFallDue(t *testing.T) {
	st := openStore(t)
	th := newThread(t, st)
	var rec starts
	s := &Scheduler{Queue: st, Start: rec.start, Logger: quiet, Poll: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// A job added while Run sleeps (for an hour) is seen after Wake.
	due := time.Now().Add(300 * time.Millisecond)
	if _, err := st.AddJob(context.Background(), store.Job{Thread: th, Message: "soon", At: due, Next: due}); err != nil {
		t.Fatal(err)
	}
	s.Wake()
	deadline := time.After(10 * time.Second)
	for len(rec.list()) == 0 {
		select {
		case <-deadline:
			t.Fatal("the job did not run")
		case <-time.After(20 * time.Millisecond):
		}
	}
	f := rec.list()[0]
	if f.Late || f.Job.Message != "soon" {
		t.Fatalf("firing = %+v", f)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

// TestRunSeesOtherProcessesJobsWithinASecond: a job another process adds
// (no Wake) runs within the default poll, a second, of its time.
func TestRunSeesOtherProcessesJobsWithinASecond(t *testing.T) {
	st := openStore(t)
	th := newThread(t, st)
	var rec starts
	s := &Scheduler{Queue: st, Start: rec.start, Logger: quiet}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(50 * time.Millisecond) // Run is asleep, with nothing to wait for
	due := time.Now().Add(200 * time.Millisecond)
	if _, err := st.AddJob(context.Background(), store.Job{Thread: th, Message: "from elsewhere", At: due, Next: due}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for len(rec.list()) == 0 {
		select {
		case <-deadline:
			t.Fatal("the job did not run within 5s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if late := time.Since(due); late > DefaultPoll+250*time.Millisecond {
		t.Errorf("the job ran %s after its time; want within the poll, %s", late, DefaultPoll)
	}
	cancel()
	<-done
}
