package redisrelay_test

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
	"github.com/reinhq/rein/session/redisrelay"
)

// node is one rein serve's runtime: a scheduler on the shared PostgreSQL
// store, its events published and the other nodes' delivered through the
// relay.
func node(t *testing.T, name, url, addr, prefix, script string) *session.Scheduler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := pgstore.Open(ctx, pgstore.Config{URL: url, Node: name})
	if err != nil {
		t.Fatal(err)
	}
	r, err := redisrelay.Open(ctx, redisrelay.Config{Addr: addr, Prefix: prefix, Node: name})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.New(session.Config{Store: st, Events: r, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	var runErr error
	go func() {
		defer close(stopped)
		runErr = r.Run(ctx, s.Relay)
	}()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		s.Close(cctx)
		cancel()
		<-stopped
		r.Close()
		st.Close()
	})
	// A publish before Run subscribed would be missed.
	select {
	case <-r.Ready():
	case <-stopped:
		t.Fatalf("the relay of %s stopped: %v", name, runErr)
	case <-time.After(30 * time.Second):
		t.Fatalf("the relay of %s did not subscribe within 30s", name)
	}
	return s
}

// A client subscribed to a thread on one node sees, live, the turn another
// node runs on it: its streamed text and its end.
func TestEventsOfATurnReachSubscribersOnAnotherNode(t *testing.T) {
	url := servicetest.Postgres(t)
	addr, prefix := servicetest.Redis(t)
	a := node(t, "a", url, addr, prefix, "rounds:\n  - text: from node a\n")
	b := node(t, "b", url, addr, prefix, "rounds:\n  - text: unused\n")
	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscribe(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	turn, err := a.Start(t.Context(), th.ID, llm.UserText("hello"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var text string
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("node b's subscriber got no end of the turn: %v (text so far %q)", err, text)
		}
		for _, e := range evs {
			if e.TurnID != turn.ID || e.ThreadID != th.ID {
				t.Errorf("an event of another turn or thread: %+v", e)
			}
			if e.Type == event.TextDelta {
				text += e.Delta
			}
			if e.Type == event.TurnCompleted {
				if text != "from node a" || e.Turn == nil || e.Turn.Answer != "from node a" {
					t.Errorf("node b saw the text %q and the end %+v", text, e.Turn)
				}
				return
			}
		}
	}
}
