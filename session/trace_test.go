package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// traceStore is a TraceStore in memory that can refuse.
type traceStore struct {
	mu     sync.Mutex
	err    error
	events map[string][]json.RawMessage // by "thread/turn"
}

func (s *traceStore) AppendTrace(_ context.Context, thread, turn string, events []json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.events == nil {
		s.events = make(map[string][]json.RawMessage)
	}
	s.events[thread+"/"+turn] = append(s.events[thread+"/"+turn], events...)
	return nil
}

func (s *traceStore) types(thread, turn string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, raw := range s.events[thread+"/"+turn] {
		var e event.Event
		json.Unmarshal(raw, &e)
		out = append(out, string(e.Type))
	}
	return out
}

// TestSchedulerAttachesTraceEventsAndInput pins what the runtime attaches
// to every run, whoever set it up: the run's events are kept as the turn's
// trace before Wait returns (deltas left out), every event reaches
// Config.Events, and Config.Input rewrites a new turn's input — the model
// and the stored history see the rewrite, the turn's record the input as
// given.
func TestSchedulerAttachesTraceEventsAndInput(t *testing.T) {
	traces := &traceStore{}
	store := session.NewMemStore()
	var mu sync.Mutex
	seen := map[event.Type]int{}
	var warnings []string // what Config.Events was warned of
	models := map[string]*scripted.Model{}
	s, err := session.New(session.Config{
		Store: store,
		Setup: func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
			mu.Lock()
			defer mu.Unlock()
			return loop.Options{Model: models[th.ID], Tools: tool.NewSet()}, nil, nil
		},
		Traces: traces,
		Events: event.HandlerFunc(func(e event.Event) {
			mu.Lock()
			seen[e.Type]++
			if e.Type == event.Warning {
				warnings = append(warnings, e.Content)
			}
			mu.Unlock()
		}),
		Input: func(_ context.Context, th session.Thread, o loop.Options, turnID string, in []llm.Item) []llm.Item {
			in[0] = llm.UserText(in[0].Text() + " [seed of " + turnID + "]")
			return in
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	run := func(text string) (string, session.Turn, *scripted.Model) {
		th, err := s.CreateThread(t.Context(), session.ThreadConfig{})
		if err != nil {
			t.Fatal(err)
		}
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "hello there"}}}, scripted.RecordRequests())
		mu.Lock()
		models[th.ID] = m
		mu.Unlock()
		tu, err := s.Start(t.Context(), th.ID, llm.UserText(text))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		tu, err = s.Wait(ctx, th.ID, tu.ID)
		if err != nil {
			t.Fatal(err)
		}
		return th.ID, tu, m
	}

	th, tu, m := run("hi")
	if tu.Status != session.TurnCompleted {
		t.Fatalf("turn %s: %s", tu.Status, tu.Error)
	}
	types := strings.Join(traces.types(th, tu.ID), " ")
	if !strings.HasPrefix(types, string(event.TurnStarted)) || !strings.HasSuffix(types, string(event.TurnCompleted)) || strings.Contains(types, string(event.TextDelta)) {
		t.Errorf("the kept trace: %s; want turn_started … turn_completed without deltas", types)
	}
	mu.Lock()
	if seen[event.TurnStarted] != 1 || seen[event.TurnCompleted] != 1 {
		t.Errorf("Config.Events saw %v; want the turn's start and end", seen)
	}
	mu.Unlock()
	want := "hi [seed of " + tu.ID + "]"
	if got := m.Requests()[0].Items[0].Text(); got != want {
		t.Errorf("the model got %q, want %q", got, want)
	}
	snap, err := store.LoadThread(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Items[0].Text(); got != want {
		t.Errorf("the history holds %q, want %q", got, want)
	}
	if got := snap.Turns[0].Input[0].Text(); got != "hi" {
		t.Errorf("the turn's record holds %q, want the input as given", got)
	}

	// A trace that cannot be written costs only the trace, and says so.
	traces.mu.Lock()
	traces.err = errors.New("disk full")
	traces.mu.Unlock()
	th2, err := s.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	models[th2.ID] = scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "ok"}}})
	mu.Unlock()
	sub, err := s.Subscribe(t.Context(), th2.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := s.Start(t.Context(), th2.ID, llm.UserText("again")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	warned, done := false, false
	for !done {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Type == event.Warning && strings.Contains(e.Content, "trace was not kept: disk full") {
				warned = true
			}
			if e.Type == event.TurnCompleted {
				if e.Status != string(session.TurnCompleted) {
					t.Errorf("the turn ended %s; a lost trace must not fail it", e.Status)
				}
				done = true
			}
		}
	}
	if !warned {
		t.Error("no warning that the trace was not kept")
	}
	// The runtime's watcher (a one-shot door's renderer) is told too.
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "trace was not kept: disk full") }) {
		t.Errorf("Config.Events got no warning that the trace was not kept: %q", warnings)
	}
}
