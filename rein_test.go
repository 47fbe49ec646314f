package rein_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/askuser"
)

func scriptedModel(t *testing.T, script string) llm.Model {
	t.Helper()
	m, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var echo = tool.New("echo", "Echo the text.", func(_ context.Context, in struct {
	Text string `json:"text"`
}) (tool.Output, error) {
	return tool.Text(in.Text), nil
}, tool.WithAccess(tool.ReadOnly))

// TestThreadKeepsItsHistoryAcrossTurns: each turn of a thread sees the
// earlier turns, and the history stays valid (every call answered once).
func TestThreadKeepsItsHistoryAcrossTurns(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - calls: [{id: c1, name: echo, args: {text: one}}]
  - text: first
  - calls: [{id: c2, name: echo, args: {text: two}}]
  - text: second
`)
	agent, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	th := agent.NewThread()
	for i, want := range []string{"first", "second"} {
		out, err := th.Run(context.Background(), "go")
		if err != nil || out.Answer != want {
			t.Fatalf("turn %d: %v, answer %q", i, err, out.Answer)
		}
	}
	h := th.History()
	if err := llm.CheckHistory(h); err != nil {
		t.Fatalf("history: %v", err)
	}
	// Two turns of: user, call, result, answer.
	if len(h) != 8 {
		t.Errorf("history has %d items, want 8", len(h))
	}
}

// TestThreadAnswerContinuesWithoutRepeatingItems: a turn that pauses on
// ask_user and is answered leaves each of its items once in the history.
func TestThreadAnswerContinuesWithoutRepeatingItems(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - calls: [{id: c1, name: echo, args: {text: before}}]
  - calls: [{id: q1, name: ask_user, args: {questions: [{id: city, prompt: "Which city?"}]}}]
  - text: Florence it is.
  - text: again
`)
	agent, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{echo, askuser.New()}})
	if err != nil {
		t.Fatal(err)
	}
	th := agent.NewThread()
	ctx := context.Background()
	out, err := th.Run(ctx, "plan a trip")
	if err != nil || out.Status != loop.StatusPaused || out.Pause == nil {
		t.Fatalf("turn: %v, status %s", err, out.Status)
	}
	if _, err := th.Run(ctx, "more"); !errors.Is(err, rein.ErrPaused) {
		t.Errorf("Run while paused: %v, want ErrPaused", err)
	}
	turnID := out.State.TurnID
	out, err = th.Answer(ctx, rein.Answer{TurnID: turnID, CallID: "q1", Text: "Florence"})
	if err != nil || out.Answer != "Florence it is." {
		t.Fatalf("answer: %v, %+v", err, out)
	}
	if _, err := th.Answer(ctx, rein.Answer{TurnID: turnID, CallID: "q1", Text: "x"}); !errors.Is(err, rein.ErrNotPaused) {
		t.Errorf("second answer: %v, want ErrNotPaused", err)
	}
	h := th.History()
	if err := llm.CheckHistory(h); err != nil {
		t.Fatalf("history after the answer: %v", err)
	}
	seen := map[string]bool{}
	for _, it := range h {
		if seen[it.ID] {
			t.Errorf("item %s is in the history twice", it.ID)
		}
		seen[it.ID] = true
	}
	// user, echo call, its result, ask_user call, its answer, the answer.
	if len(h) != 6 {
		t.Errorf("history has %d items, want 6", len(h))
	}
	out, err = th.Run(ctx, "again")
	if err != nil || out.Answer != "again" {
		t.Fatalf("next turn: %v, %+v", err, out)
	}
	if err := llm.CheckHistory(th.History()); err != nil {
		t.Fatalf("history after the next turn: %v", err)
	}
}

// TestThreadAnsweredTwiceKeepsOneCopy: a turn that pauses again after its
// first answer still leaves each item once.
func TestThreadAnsweredTwiceKeepsOneCopy(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - calls: [{id: q1, name: ask_user, args: {questions: [{id: a, prompt: "First?"}]}}]
  - calls: [{id: q2, name: ask_user, args: {questions: [{id: b, prompt: "Second?"}]}}]
  - text: done
`)
	agent, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{askuser.New()}})
	if err != nil {
		t.Fatal(err)
	}
	th := agent.NewThread()
	ctx := context.Background()
	out, err := th.Run(ctx, "ask me")
	if err != nil || out.Status != loop.StatusPaused {
		t.Fatalf("turn: %v, %s", err, out.Status)
	}
	for _, call := range []string{"q1", "q2"} {
		out, err = th.Answer(ctx, rein.Answer{TurnID: out.State.TurnID, CallID: call, Text: "yes"})
		if err != nil {
			t.Fatalf("answer %s: %v", call, err)
		}
		if call == "q1" && out.Status != loop.StatusPaused {
			t.Fatalf("after q1: %s, want paused again", out.Status)
		}
	}
	if out.Answer != "done" {
		t.Fatalf("answer %q", out.Answer)
	}
	h := th.History()
	if err := llm.CheckHistory(h); err != nil || len(h) != 6 {
		t.Fatalf("history of %d items: %v; want 6 valid items", len(h), err)
	}
}

// TestLongThreadStaysValid runs 100 turns of a call and an answer on one
// thread, past the length from which the engine carries a thread's context
// from turn to turn instead of copying it: every request and the history
// stay valid, and each turn sees all the earlier ones.
func TestLongThreadStaysValid(t *testing.T) {
	const turns = 100
	var script strings.Builder
	script.WriteString("rounds:\n")
	for i := range turns {
		fmt.Fprintf(&script, "  - calls: [{id: c%d, name: echo, args: {text: t%d}}]\n  - text: answer %d\n", i, i, i)
	}
	m, err := scripted.Parse([]byte(script.String()), scripted.RecordRequests())
	if err != nil {
		t.Fatal(err)
	}
	agent, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	th := agent.NewThread()
	for i := range turns {
		out, err := th.Run(context.Background(), "go")
		if err != nil || out.Answer != fmt.Sprintf("answer %d", i) {
			t.Fatalf("turn %d: %v, %q", i, err, out.Answer)
		}
	}
	h := th.History()
	if err := llm.CheckHistory(h); err != nil || len(h) != 4*turns {
		t.Fatalf("history of %d items: %v", len(h), err)
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	if n := len(last.Items); n != 4*turns-1 {
		t.Errorf("the last request carries %d items, want %d", n, 4*turns-1)
	}
}

// TestHistoryIsTheCallersToAppendTo: appending to what History returned
// changes neither the thread nor a slice History returned before.
func TestHistoryIsTheCallersToAppendTo(t *testing.T) {
	m := scriptedModel(t, "rounds:\n  - text: a\n  - text: b\n  - text: c\n  - text: d\n")
	agent, err := rein.New(rein.Options{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	th := agent.NewThread()
	ctx := context.Background()
	// Three turns leave the history's array with room to spare (6 of 8).
	for _, p := range []string{"one", "two", "three"} {
		if _, err := th.Run(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mine := append(th.History(), llm.UserText("mine"))
	if _, err := th.Run(ctx, "four"); err != nil {
		t.Fatal(err)
	}
	h := th.History()
	if len(h) != 8 || h[6].Text() != "four" {
		t.Fatalf("history %d items, seventh %q", len(h), h[6].Text())
	}
	if mine[6].Text() != "mine" {
		t.Errorf("the thread wrote over the caller's slice: %q", mine[6].Text())
	}
}
