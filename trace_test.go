package rein_test

import (
	"context"
	"encoding/json"
	"reflect"
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
