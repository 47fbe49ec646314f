package session_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// Two schedulers on one store — two processes on one database — never run
// two turns of a thread at once: the second is refused with an error that
// names the running turn, and the history stays valid.
func TestTwoSchedulersOnOneStoreRunOneTurnPerThread(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func(t *testing.T, m *scripted.Model, tools ...tool.Tool) (a, b *session.Scheduler, read func(thread string) []llm.Item)
	}{
		{"SQLStore", func(t *testing.T, m *scripted.Model, tools ...tool.Tool) (*session.Scheduler, *session.Scheduler, func(string) []llm.Item) {
			path := filepath.Join(t.TempDir(), "rein.db")
			a, closeA := sqlScheduler(t, path, m, tools...)
			b, closeB := sqlScheduler(t, path, m, tools...)
			t.Cleanup(closeB)
			t.Cleanup(closeA)
			return a, b, func(thread string) []llm.Item {
				snap, err := b.ReadThread(t.Context(), thread)
				if err != nil {
					t.Fatal(err)
				}
				return snap.Items
			}
		}},
		{"MemStore", func(t *testing.T, m *scripted.Model, tools ...tool.Tool) (*session.Scheduler, *session.Scheduler, func(string) []llm.Item) {
			ms := session.NewMemStore()
			open := func() *session.Scheduler {
				s, err := session.New(session.Config{Store: ms, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
					return loop.Options{Model: m, Tools: tool.NewSet(tools...), Grace: 100 * time.Millisecond}, nil, nil
				}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					s.Close(ctx)
				})
				return s
			}
			return open(), open(), func(thread string) []llm.Item {
				snap, err := ms.LoadThread(t.Context(), thread)
				if err != nil {
					t.Fatal(err)
				}
				return snap.Items
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			started, release := make(chan struct{}, 1), make(chan struct{})
			m := scripted.New(scripted.Script{Rounds: []scripted.Round{
				{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
				{Text: "first done"},
				{Text: "second done", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "second"}}}},
			}}, scripted.RecordRequests())
			a, b, read := tt.open(t, m, gateTool("work", started, release))
			th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
			if err != nil {
				t.Fatal(err)
			}
			first, err := a.Start(t.Context(), th.ID, llm.UserText("first"))
			if err != nil {
				t.Fatal(err)
			}
			<-started

			_, err = b.Start(t.Context(), th.ID, llm.UserText("intruder"))
			if !errors.Is(err, session.ErrTurnBusy) {
				t.Fatalf("a second scheduler started a turn while %s runs: %v, want ErrTurnBusy", first.ID, err)
			}
			if !strings.Contains(err.Error(), first.ID) {
				t.Errorf("the refusal %q does not name the running turn %s", err, first.ID)
			}
			close(release)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if tu, err := a.Wait(ctx, th.ID, first.ID); err != nil || tu.Status != session.TurnCompleted {
				t.Fatalf("first turn: %+v, %v", tu, err)
			}

			// Once it has ended the second scheduler may go on, from the
			// history as the store holds it, not as it loaded it.
			second, err := b.Start(t.Context(), th.ID, llm.UserText("second"))
			if err != nil {
				t.Fatalf("the thread is free again: %v", err)
			}
			if tu, err := b.Wait(ctx, th.ID, second.ID); err != nil || tu.Status != session.TurnCompleted {
				t.Fatalf("second turn: %+v, %v", tu, err)
			}
			reqs := m.Requests()
			last := reqs[len(reqs)-1].Items
			if !containsText(last, "first done") {
				t.Errorf("the second scheduler's turn did not see the first turn's answer: %+v", last)
			}
			items := read(th.ID)
			if err := llm.CheckHistory(items); err != nil {
				t.Errorf("history: %v", err)
			}
			for _, it := range items {
				if strings.Contains(it.Text(), "intruder") {
					t.Errorf("the refused input reached the history: %+v", it)
				}
			}
			verify(t, m)
		})
	}
}

func containsText(items []llm.Item, text string) bool {
	for _, it := range items {
		if strings.Contains(it.Text(), text) {
			return true
		}
	}
	return false
}

// failingEnds is a store whose disk fills once armed: every write of a
// turn's end fails.
type failingEnds struct {
	*session.MemStore
	mu    sync.Mutex
	armed bool
}

var errDiskFull = errors.New("database or disk is full (SQLITE_FULL)")

func (f *failingEnds) arm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = true
}

func (f *failingEnds) SaveTurn(ctx context.Context, t session.Turn) error {
	f.mu.Lock()
	armed := f.armed
	f.mu.Unlock()
	if armed && (t.Status.Done() || t.Status == session.TurnPaused) {
		return errDiskFull
	}
	return f.MemStore.SaveTurn(ctx, t)
}

// A turn whose end cannot be stored is not reported completed: Wait and
// turn_completed say it failed, with the write error.
func TestATurnWhoseEndIsNotStoredFails(t *testing.T) {
	for _, tt := range []struct {
		name  string
		round scripted.Round
		want  session.TurnStatus // what the engine reports
	}{
		{"completed", scripted.Round{Text: "done"}, session.TurnCompleted},
		{"paused", scripted.Round{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}}, session.TurnPaused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := &failingEnds{MemStore: session.NewMemStore()}
			m := scripted.New(scripted.Script{Rounds: []scripted.Round{tt.round}})
			s, err := session.New(session.Config{Store: fs, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
				return loop.Options{Model: m, Tools: tool.NewSet(askTool())}, nil, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
			if err != nil {
				t.Fatal(err)
			}
			sub, err := s.Subscribe(t.Context(), th.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			fs.arm()
			tu, err := s.Start(t.Context(), th.ID, llm.UserText("go"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			got, err := s.Wait(ctx, th.ID, tu.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != session.TurnFailed || got.StopReason != session.StopStoreError || !strings.Contains(got.Error, errDiskFull.Error()) {
				t.Errorf("turn whose end was not stored: %s (%s) %q, want failed (%s) with the write error", got.Status, got.StopReason, got.Error, session.StopStoreError)
			}
			done := false
			for !done {
				evs, err := sub.Next(ctx)
				if err != nil {
					t.Fatalf("no turn_completed: %v", err)
				}
				for _, e := range evs {
					if e.Type == event.PauseRequested {
						t.Errorf("a pause that was not stored was announced")
					}
					if e.Type != event.TurnCompleted {
						continue
					}
					if e.Status != string(session.TurnFailed) || e.Turn == nil || !strings.Contains(e.Turn.Error, errDiskFull.Error()) {
						t.Errorf("turn_completed %s %+v, want failed with the write error", e.Status, e.Turn)
					}
					done = true
				}
			}
			// The thread is not left waiting on a pause nobody stored.
			if _, ok, err := s.Active(t.Context(), th.ID); err != nil || ok {
				t.Errorf("the thread still has an active turn (%v, %v)", ok, err)
			}
		})
	}
}

// A second process that opens a thread while the first runs a turn with
// another queued behind it leaves the queued turn to the first: it runs
// once, after the running one, in the process that queued it.
func TestAQueuedTurnIsNotTakenByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	started, release := make(chan struct{}, 1), make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "first done"},
		{Text: "queued done", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "queued"}}}},
	}}, scripted.RecordRequests())
	a, closeA := sqlScheduler(t, path, m, gateTool("work", started, release))
	defer closeA()
	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Start(t.Context(), th.ID, llm.UserText("first"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	queued, err := a.Start(t.Context(), th.ID, llm.UserText("queued"))
	if err != nil || queued.Status != session.TurnQueued {
		t.Fatalf("queue a turn: %+v, %v", queued, err)
	}

	b, closeB := sqlScheduler(t, path, m)
	defer closeB()
	if _, err := b.ResumeThread(t.Context(), th.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Active(t.Context(), th.ID); err != nil || ok {
		t.Fatalf("the second process took a turn of the thread (active %v, %v)", ok, err)
	}
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, id := range []string{first.ID, queued.ID} {
		if tu, err := a.Wait(ctx, th.ID, id); err != nil || tu.Status != session.TurnCompleted {
			t.Fatalf("turn %s: %+v, %v", id, tu, err)
		}
	}
	snap, err := b.ReadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("history: %v", err)
	}
	verify(t, m)
}

func (f *failingEnds) disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
}

// Interrupting a queued turn whose new status cannot be stored is an error
// and changes nothing: the turn stays queued and runs in its turn.
func TestInterruptOfAQueuedTurnNotStoredChangesNothing(t *testing.T) {
	fs := &failingEnds{MemStore: session.NewMemStore()}
	started, release := make(chan struct{}, 1), make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "first done"},
		{Text: "queued done"},
	}})
	s, err := session.New(session.Config{Store: fs, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m, Tools: tool.NewSet(gateTool("work", started, release))}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Start(t.Context(), th.ID, llm.UserText("first"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	queued, err := s.Start(t.Context(), th.ID, llm.UserText("queued"))
	if err != nil {
		t.Fatal(err)
	}
	fs.arm()
	if err := s.Interrupt(t.Context(), th.ID, queued.ID); !errors.Is(err, errDiskFull) {
		t.Fatalf("interrupting a queued turn on a full disk: %v, want the write error", err)
	}
	fs.disarm()
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, id := range []string{first.ID, queued.ID} {
		if tu, err := s.Wait(ctx, th.ID, id); err != nil || tu.Status != session.TurnCompleted {
			t.Errorf("turn %s: %s, %v; want completed", id, tu.Status, err)
		}
	}
}

// countingStore counts the thread loads a scheduler makes.
type countingStore struct {
	session.Store
	mu    sync.Mutex
	loads int
}

func (c *countingStore) LoadThread(ctx context.Context, id string) (*session.Snapshot, error) {
	c.mu.Lock()
	c.loads++
	c.mu.Unlock()
	return c.Store.LoadThread(ctx, id)
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// A scheduler alone on its store never reads a thread again to start a
// turn: what it holds of the history matches the store's count after
// turns with calls, steered input, a pause and its answer.
func TestClaimDoesNotReloadAThreadNobodyElseChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	started, release := make(chan struct{}, 1), make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}},
		{Text: "answered"},
		{Text: "second"},
		{Text: "third"},
	}}, scripted.RecordRequests())
	cs := &countingStore{Store: session.NewSQLStore(db)}
	s, err := session.New(session.Config{Store: cs, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m, Tools: tool.NewSet(gateTool("work", started, release), askTool())}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	first, err := s.Start(ctx, th.ID, llm.UserText("first"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := s.Steer(ctx, th.ID, first.ID, llm.UserText("steered")); err != nil {
		t.Fatal(err)
	}
	close(release)
	if tu, err := s.Wait(ctx, th.ID, first.ID); err != nil || tu.Status != session.TurnPaused {
		t.Fatalf("first turn %+v %v, want paused", tu, err)
	}
	if err := s.Answer(ctx, th.ID, loop.Answer{TurnID: first.ID, CallID: "a1", Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	if tu, err := s.Wait(ctx, th.ID, first.ID); err != nil || tu.Status != session.TurnCompleted {
		t.Fatalf("first turn %+v %v", tu, err)
	}
	for _, text := range []string{"second", "third"} {
		tu, err := s.Start(ctx, th.ID, llm.UserText(text))
		if err != nil {
			t.Fatal(err)
		}
		if tu, err := s.Wait(ctx, th.ID, tu.ID); err != nil || tu.Status != session.TurnCompleted {
			t.Fatalf("turn %q: %+v %v", text, tu, err)
		}
	}
	if n := cs.count(); n != 0 {
		t.Errorf("the scheduler read the thread %d times; nobody else changed it", n)
	}
	verify(t, m)
}

// busyClaims refuses claims of the turns it is told of, as a store does
// when another process took the thread first.
type busyClaims struct {
	*session.MemStore
	mu      sync.Mutex
	refused map[string]bool
}

func (b *busyClaims) refuse(turnID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused[turnID] = true
}

func (b *busyClaims) ClaimTurn(ctx context.Context, t session.Turn) (session.Claim, error) {
	b.mu.Lock()
	refused := b.refused[t.ID]
	b.mu.Unlock()
	if refused {
		return session.Claim{}, fmt.Errorf("thread %s: turn turn_other is running in process 4242 on elsewhere: %w", t.ThreadID, session.ErrTurnBusy)
	}
	return b.MemStore.ClaimTurn(ctx, t)
}

// A queued turn whose claim is refused when its turn comes ends failed,
// saying why, after the turn before it is announced ended; the queue goes
// on.
func TestAQueuedTurnThatCannotBeClaimedFails(t *testing.T) {
	bs := &busyClaims{MemStore: session.NewMemStore(), refused: map[string]bool{}}
	started, release := make(chan struct{}, 1), make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "first done"},
		{Text: "third done"},
	}})
	s, err := session.New(session.Config{Store: bs, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m, Tools: tool.NewSet(gateTool("work", started, release))}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	first, _ := s.Start(t.Context(), th.ID, llm.UserText("first"))
	<-started
	second, _ := s.Start(t.Context(), th.ID, llm.UserText("second"))
	third, _ := s.Start(t.Context(), th.ID, llm.UserText("third"))
	bs.refuse(second.ID)
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got, err := s.Wait(ctx, th.ID, second.ID)
	if err != nil || got.Status != session.TurnFailed || got.StopReason != session.StopNotStarted || !strings.Contains(got.Error, "process 4242") {
		t.Errorf("refused queued turn: %+v, %v; want failed (%s) naming the other process", got, err, session.StopNotStarted)
	}
	if tu, err := s.Wait(ctx, th.ID, third.ID); err != nil || tu.Status != session.TurnCompleted {
		t.Errorf("the queue did not go on: %+v, %v", tu, err)
	}
	var ended []string
	for len(ended) < 3 {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("events: %v (ended so far %v)", err, ended)
		}
		for _, e := range evs {
			if e.Type == event.TurnCompleted {
				ended = append(ended, e.TurnID+":"+e.Status)
			}
		}
	}
	want := []string{first.ID + ":completed", second.ID + ":failed", third.ID + ":completed"}
	if strings.Join(ended, " ") != strings.Join(want, " ") {
		t.Errorf("turn_completed in the order %v, want %v", ended, want)
	}
}
