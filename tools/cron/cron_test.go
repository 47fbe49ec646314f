package cron

import (
	"context"
	"encoding/json"
	"github.com/reinhq/rein/record"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newThread(t *testing.T, st *store.Store) string {
	t.Helper()
	th, err := st.CreateThread(context.Background(), record.Thread{})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID
}

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)

func run(t *testing.T, tl tool.Tool, thread, args string) tool.Output {
	t.Helper()
	out, err := tl.Run(context.Background(), tool.Call{ThreadID: thread, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("cron %s: %v", args, err)
	}
	return out
}

func TestCronToolSchedulesListsAndCancels(t *testing.T) {
	st := openStore(t)
	th, other := newThread(t, st), newThread(t, st)
	clk := &clock{t0}
	woken := 0
	c := New(st, Options{Now: clk.now, Scheduled: func() { woken++ }})
	steps := []struct {
		thread, args string
		want         string
		failed       bool
	}{
		{th, `{"action":"schedule","message":"stand-up summary","name":"standup","cron_expr":"0 9 * * 1-5","tz":"Europe/Paris"}`, "(cron 0 9 * * 1-5 Europe/Paris), first run 2025-06-02T09:00:00+02:00", false},
		{th, `{"action":"schedule","message":"check the build","every_seconds":60}`, "(every 60s), first run 2025-06-01T08:01:00Z", false},
		{th, `{"action":"schedule","message":"remind me","at":"2025-06-01T10:00","tz":"UTC"}`, "(once at 2025-06-01T10:00:00Z)", false},
		{th, `{"action":"schedule","message":"x","at":"2025-06-01T09:00:00+02:00"}`, "first run 2025-06-01T07:00:00Z", true},
		{th, `{"action":"schedule","message":"x"}`, "exactly one way", true},
		{th, `{"action":"schedule","message":"x","every_seconds":60,"cron_expr":"* * * * *"}`, "exactly one way", true},
		{th, `{"action":"schedule","message":"x","every_seconds":10}`, "the minimum is 30", true},
		{th, `{"action":"schedule","message":"x","every_seconds":-5}`, "must be positive", true},
		{th, `{"action":"schedule","message":"x","cron_expr":"0 0 30 2 *"}`, "never matches", true},
		{th, `{"action":"schedule","message":"x","cron_expr":"61 * * * *"}`, "minute field", true},
		{th, `{"action":"schedule","message":"x","at":"tomorrow"}`, "not an ISO 8601 time", true},
		{th, `{"action":"schedule","message":"x","at":"2024-01-01T00:00:00Z"}`, "in the past", true},
		{th, `{"action":"schedule","message":"x","every_seconds":60,"tz":"Mars/Olympus"}`, "not a known time zone", true},
		{th, `{"action":"schedule","message":"  ","every_seconds":60}`, "message is empty", true},
		{"", `{"action":"schedule","message":"x","every_seconds":60}`, "not kept in a thread", true},
		{th, `{"action":"pause"}`, `action "pause"`, true},
		{th, `{"action":"list","bogus":1}`, "invalid arguments", true},
		{th, `{"action":"cancel"}`, "needs job_id", true},
		{th, `{"action":"cancel","job_id":"job_nope"}`, `no active job "job_nope"`, true},
	}
	for _, s := range steps {
		out := run(t, c, s.thread, s.args)
		// The +02:00 "at" is 07:00Z, before now: in the past.
		if strings.Contains(s.args, "+02:00") {
			s.want = "in the past"
		}
		if out.Failed != s.failed || !strings.Contains(out.Text, s.want) {
			t.Errorf("cron %s = %+v, want failed=%v and %q", s.args, out, s.failed, s.want)
		}
	}
	if woken != 3 {
		t.Fatalf("Scheduled called %d times, want 3", woken)
	}
	out := run(t, c, th, `{"action":"list"}`)
	if !strings.HasPrefix(out.Text, "3 scheduled jobs:") || !strings.Contains(out.Text, "standup: stand-up summary") {
		t.Fatalf("list:\n%s", out.Text)
	}
	if out := run(t, c, other, `{"action":"list"}`); out.Text != "no scheduled jobs in this conversation" {
		t.Fatalf("other thread's list: %s", out.Text)
	}
	jobs, _ := st.Jobs(context.Background(), th, false)
	// Another thread cannot cancel this thread's job.
	if out := run(t, c, other, `{"action":"cancel","job_id":"`+jobs[0].ID+`"}`); !out.Failed {
		t.Fatalf("cancelled from another thread: %+v", out)
	}
	if out := run(t, c, th, `{"action":"cancel","job_id":"`+jobs[0].ID+`"}`); out.Failed || out.Text != "cancelled "+jobs[0].ID {
		t.Fatalf("cancel: %+v", out)
	}
	if out := run(t, c, th, `{"action":"list"}`); !strings.HasPrefix(out.Text, "2 scheduled jobs:") {
		t.Fatalf("list after cancel:\n%s", out.Text)
	}
	if k := tool.KeysOf(c, json.RawMessage(`{"action":"list"}`)); len(k.Reads) != 1 || len(k.Writes) != 0 {
		t.Fatalf("list keys = %+v", k)
	}
}

func TestCronToolCapsJobsPerThread(t *testing.T) {
	st := openStore(t)
	th := newThread(t, st)
	c := New(st, Options{Now: (&clock{t0}).now})
	for i := range MaxJobs {
		if out := run(t, c, th, `{"action":"schedule","message":"m","every_seconds":3600}`); out.Failed {
			t.Fatalf("job %d: %s", i, out.Text)
		}
	}
	if out := run(t, c, th, `{"action":"schedule","message":"m","every_seconds":3600}`); !out.Failed || !strings.Contains(out.Text, "cancel some first") {
		t.Fatalf("job over the cap: %+v", out)
	}
}
