package loop_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// A turn continued from its committed items (its node was lost) does not
// run its committed rounds again: the call it had in flight runs again and
// its result is recorded before the one model request it still needs, the
// items it adds are numbered after the committed ones, its counters count
// the committed round, and it does not announce a start.
func TestContinueGoesOnFromTheCommittedItems(t *testing.T) {
	history := []llm.Item{
		{ID: "t0.1", TurnID: "t0", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "earlier"}}},
		{ID: "t0.2", TurnID: "t0", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "ok"}}},
	}
	committed := []llm.Item{
		{ID: "t1.1", TurnID: "t1", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "look it up"}}},
		{ID: "t1.2", TurnID: "t1", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "looking"},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c1", Name: "look", Args: `{}`}}}},
	}
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "found it"}}}, scripted.RecordRequests())
	j := &journal{}
	ev := &events{}
	e, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(textTool("look", "the value")), Journal: j, Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := e.Continue(ctx, loop.Turn{ThreadID: "th", ID: "t1", History: history}, committed, []llm.Call{*committed[1].Parts[1].Call})
	if err != nil || out.Status != loop.StatusCompleted || out.Answer != "found it" {
		t.Fatalf("the continued turn ended %v %q, %v; want completed with the answer", out.Status, out.Answer, err)
	}
	checkInvariants(t, m)
	mustVerify(t, m)
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model was asked %d times, want once (the committed round is not run again)", len(reqs))
	}
	var last llm.Item
	for _, it := range reqs[0].Items {
		if it.Role == llm.RoleTool {
			last = it
		}
	}
	if res := last.Result(); res == nil || res.CallID != "c1" || res.Content != "the value" {
		t.Errorf("the request's result is %+v, want the call in flight run again", res)
	}
	var ids []string
	for _, it := range j.items {
		ids = append(ids, it.ID)
	}
	if strings.Join(ids, " ") != "t1.3 t1.4" {
		t.Errorf("recorded %v, want the result and the answer numbered after the committed items (t1.3 t1.4)", ids)
	}
	if out.Rounds != 2 || out.ToolSteps != 1 {
		t.Errorf("rounds %d, tool steps %d; want 2 and 1 (the committed round counts)", out.Rounds, out.ToolSteps)
	}
	if n := len(ev.of(event.TurnStarted)); n != 0 {
		t.Errorf("the continued turn announced %d starts, want none", n)
	}
}

// A run asked to yield (Options.Yield) stops at the next round boundary:
// the round in progress finishes and is recorded, nothing more is
// recorded, no end is announced, and the outcome says it was handed over.
func TestYieldStopsAtTheNextRoundBoundary(t *testing.T) {
	var yield sync.Once
	asked := make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Text: "step", Calls: []scripted.Call{call("look", map[string]any{})}},
		{Text: "never asked"},
	}}, scripted.RecordRequests())
	j := &journal{}
	ev := &events{}
	var yielding atomic.Bool
	look := &fakeTool{spec: tool.Spec{Name: "look", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		yield.Do(func() { close(asked) })
		yielding.Store(true) // set while the round runs: it still finishes
		return tool.Output{Text: "v"}, nil
	}}
	e, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(look), Journal: j, Events: ev, Yield: yielding.Load})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(context.Background(), loop.Turn{ThreadID: "th", ID: "t1", Input: []llm.Item{llm.UserText("go")}})
	<-asked
	if err != nil || out.StopReason != loop.StopYielded {
		t.Fatalf("the run ended %v/%v, %v; want handed over", out.Status, out.StopReason, err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
	if len(j.items) != 3 || j.items[2].Role != llm.RoleTool {
		t.Errorf("recorded %d items, want the input, the round and its result", len(j.items))
	}
	if n := len(ev.of(event.TurnCompleted)); n != 0 {
		t.Errorf("a handed-over run announced %d ends, want none", n)
	}
}
