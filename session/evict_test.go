package session_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// clock is a settable time for a scheduler's Config.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A scheduler forgets the threads unused for the idle time that have
// nothing going on, and keeps a thread with a running turn or a subscriber
// however long it goes unnamed; a forgotten thread is loaded again, its
// history whole, when a call names it.
func TestEvictIdleForgetsOnlyIdleThreads(t *testing.T) {
	st := session.NewMemStore()
	clk := &clock{now: time.Unix(1_000_000, 0)}
	started, release := make(chan struct{}, 1), make(chan struct{})
	var mu sync.Mutex
	scripts := map[string]*scripted.Model{}
	var forgotten []string // what Config.Forgotten was told, in order
	told := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(forgotten))
	}
	s, err := session.New(session.Config{Store: st, Now: clk.Now, Setup: func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
		mu.Lock()
		defer mu.Unlock()
		return loop.Options{Model: scripts[th.ID], Tools: tool.NewSet(gateTool("look", started, release))}, nil, nil
	}, Forgotten: func(id string) {
		mu.Lock()
		defer mu.Unlock()
		forgotten = append(forgotten, id)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	newThread := func(script scripted.Script) string {
		th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		scripts[th.ID] = scripted.New(script, scripted.RecordRequests())
		mu.Unlock()
		return th.ID
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	idle := newThread(scripted.Script{Rounds: []scripted.Round{{Text: "first answer"}, {Text: "second answer"}}})
	tu, err := s.Start(t.Context(), idle, llm.UserText("first"))
	if err != nil {
		t.Fatal(err)
	}
	if end, err := s.Wait(ctx, idle, tu.ID); err != nil || end.Status != session.TurnCompleted {
		t.Fatalf("first turn: %s, %v", end.Status, err)
	}
	busy := newThread(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{Name: "look", Args: map[string]any{}}}}, {Text: "looked"}}})
	busyTurn, err := s.Start(t.Context(), busy, llm.UserText("look"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	watched := newThread(scripted.Script{})
	sub, err := s.Subscribe(t.Context(), watched)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.EvictIdle(time.Minute, 0); n != 0 || s.Held() != 3 {
		t.Fatalf("before the idle time: forgot %d, holds %d; want 0 and 3", n, s.Held())
	}
	clk.add(2 * time.Minute)
	if n := s.EvictIdle(time.Minute, 0); n != 1 || s.Held() != 2 {
		t.Fatalf("after the idle time: forgot %d, holds %d; want the idle thread only", n, s.Held())
	}
	if got := told(); !slices.Equal(got, []string{idle}) {
		t.Fatalf("Config.Forgotten was told %q, want the idle thread %q alone", got, idle)
	}
	if s.Forget(busy) || s.Forget(watched) {
		t.Fatal("Forget dropped a thread with a running turn or a subscriber")
	}
	if got := told(); len(got) != 1 {
		t.Fatalf("Config.Forgotten was told %q: threads still held", got)
	}

	// The running turn ends, the subscriber leaves: they go a idle time
	// after, not at once.
	close(release)
	if end, err := s.Wait(ctx, busy, busyTurn.ID); err != nil || end.Status != session.TurnCompleted {
		t.Fatalf("busy turn: %s, %v", end.Status, err)
	}
	sub.Close()
	clk.add(30 * time.Second)
	if n := s.EvictIdle(time.Minute, 0); n != 0 {
		t.Errorf("forgot %d threads that were busy a moment ago", n)
	}
	clk.add(2 * time.Minute)
	if n := s.EvictIdle(time.Minute, 0); n != 2 || s.Held() != 0 {
		t.Errorf("forgot %d, holds %d; want both now idle", n, s.Held())
	}
	if got, want := told(), slices.Sorted(slices.Values([]string{idle, busy, watched})); !slices.Equal(got, want) {
		t.Errorf("Config.Forgotten was told %q, want %q", got, want)
	}

	// Named again, the forgotten thread is loaded with its history.
	tu, err = s.Start(t.Context(), idle, llm.UserText("second"))
	if err != nil {
		t.Fatal(err)
	}
	if end, err := s.Wait(ctx, idle, tu.ID); err != nil || end.Answer != "second answer" {
		t.Fatalf("second turn: %+v, %v", end, err)
	}
	mu.Lock()
	reqs := scripts[idle].Requests()
	mu.Unlock()
	if items := reqs[len(reqs)-1].Items; len(items) != 3 || items[0].Text() != "first" || items[1].Text() != "first answer" {
		t.Errorf("the reloaded thread's request: %s; want the first turn, then the second input", describe(items))
	}
}

// Above the count bound the least recently used idle threads go first,
// once unused for a few seconds.
func TestEvictIdleKeepsTheMostRecentlyUsed(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	s, err := session.New(session.Config{Store: session.NewMemStore(), Now: clk.Now, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 5 {
		th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
		clk.add(time.Second)
	}
	if n := s.EvictIdle(0, 2); n != 0 {
		t.Fatalf("forgot %d threads used a second ago", n)
	}
	clk.add(time.Minute)
	if _, err := s.ResumeThread(t.Context(), ids[0]); err != nil { // the oldest, used again
		t.Fatal(err)
	}
	clk.add(20 * time.Second)
	if n := s.EvictIdle(0, 2); n != 3 || s.Held() != 2 {
		t.Fatalf("forgot %d, holds %d; want 3 and 2", n, s.Held())
	}
	if n := s.EvictIdle(0, 2); n != 0 {
		t.Errorf("forgot %d more at the bound", n)
	}
}
