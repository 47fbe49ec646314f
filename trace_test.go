package rein_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tools/askuser"
)

// TestThreadTraceReadsAsEachEventWasWhenItCame: the trace an agent keeps
// in memory (encoded only when it is read) reads as every event read when
// it was handled, deltas left out, across a pause and its answer: the
// pause's placeholder result reads pending, as it was then, though the
// answer took its place in the history since.
func TestThreadTraceReadsAsEachEventWasWhenItCame(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - calls: [{id: c1, name: echo, args: {text: "<b>before</b> & after"}}]
  - calls: [{id: q1, name: ask_user, args: {questions: [{id: city, prompt: "Which city?"}]}}]
  - text: Florence it is.
  - text: again
`)
	var (
		mu   sync.Mutex
		seen [][]byte // each event's JSON when it was handled
	)
	a, err := rein.New(rein.Options{
		Model: m, Tools: []rein.Tool{echo, askuser.New()},
		Events: event.HandlerFunc(func(e event.Event) {
			switch e.Type {
			case event.TextDelta, event.ThinkingDelta, event.CallDelta, event.ToolOutput:
				return
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen = append(seen, b)
			mu.Unlock()
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := t.Context()
	th := a.NewThread()
	out, err := th.Run(ctx, "plan a trip")
	if err != nil || out.Status != rein.StatusPaused {
		t.Fatalf("turn: %v, %+v", err, out)
	}
	if _, err := th.Answer(ctx, rein.Answer{TurnID: out.TurnID, CallID: "q1", Text: "Florence"}); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Run(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	trace, err := th.Trace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(trace) != len(seen) {
		t.Fatalf("the trace holds %d events, %d were handled", len(trace), len(seen))
	}
	pending := 0
	for i, raw := range seen {
		var want rein.Event
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(trace[i], want) {
			got, _ := json.Marshal(trace[i])
			t.Errorf("event %d reads\n%s\nit was\n%s", i, got, raw)
		}
		if it := want.Item; it != nil && it.Role == llm.RoleTool && it.Result() != nil && it.Result().Status == llm.ResultPending {
			pending++
		}
	}
	if pending != 1 {
		t.Errorf("%d placeholder results in the trace, want 1", pending)
	}
}

// TestTracesReadTheSameWhileRoomsAreRecycled: the room a run's events were
// kept in goes back for other runs once its trace is read (encoded) or its
// thread forgotten; a trace read later, after other threads' runs took
// rooms, still reads as its events were handled.
func TestTracesReadTheSameWhileRoomsAreRecycled(t *testing.T) {
	const threads = 12
	var script strings.Builder
	script.WriteString("rounds:\n")
	for i := range 3 * threads {
		fmt.Fprintf(&script, "  - calls: [{id: c%d, name: echo, args: {text: t%d}}]\n  - text: done %d\n", i, i, i)
	}
	m := scriptedModel(t, script.String())
	var (
		mu   sync.Mutex
		seen = map[string][][]byte{} // by thread: each event's JSON when it was handled
	)
	a, err := rein.New(rein.Options{
		Model: m, Tools: []rein.Tool{echo},
		Events: event.HandlerFunc(func(e event.Event) {
			switch e.Type {
			case event.TextDelta, event.ThinkingDelta, event.CallDelta, event.ToolOutput:
				return
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen[e.ThreadID] = append(seen[e.ThreadID], b)
			mu.Unlock()
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := t.Context()
	var kept []*rein.Thread
	for i := range threads {
		th := a.NewThread()
		kept = append(kept, th)
		if _, err := th.Run(ctx, "first"); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// Read now: the run's room goes back, and the next run's
			// events are kept in a room of their own.
			if _, err := th.Trace(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// A thread the agent forgets at once: its room goes back.
		if _, err := a.Run(ctx, "once"); err != nil {
			t.Fatal(err)
		}
		if _, err := th.Run(ctx, "second"); err != nil {
			t.Fatal(err)
		}
	}
	for _, th := range kept {
		trace, err := th.Trace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		want := seen[th.ID()]
		mu.Unlock()
		if len(trace) != len(want) || len(want) == 0 {
			t.Fatalf("thread %s: the trace holds %d events, %d were handled", th.ID(), len(trace), len(want))
		}
		for i, raw := range want {
			var w rein.Event
			if err := json.Unmarshal(raw, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(trace[i], w) {
				got, _ := json.Marshal(trace[i])
				t.Errorf("thread %s event %d reads\n%s\nit was\n%s", th.ID(), i, got, raw)
			}
		}
	}
}
