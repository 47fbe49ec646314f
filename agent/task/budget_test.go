package task_test

import (
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

func TestAChildsRoundsCountAgainstTheParentsMaxRounds(t *testing.T) {
	const prompt = "Read three things."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			// The parent's own round and the child's three spent its four:
			// the next round is the forced final one, without tools.
			{Text: "What the sub-agent found.", Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}}},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "c1", Name: "lookup", Args: map[string]any{"n": 1}}}},
			{Calls: []scripted.Call{{ID: "c2", Name: "lookup", Args: map[string]any{"n": 2}}}},
			{Text: "Three things."},
		}},
	)
	tk := task.New(task.Options{})
	eng, err := loop.New(loop.Options{Model: m, MaxRounds: 4, NoSettlement: true, Tools: bound(tool.NewSet(textTool("lookup", "data", tool.ReadOnly), tk), tk)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out.StopReason != loop.StopForcedBudget {
		t.Errorf("stop reason %s, want %s: max_rounds bounds the parent's rounds and its children's together", out.StopReason, loop.StopForcedBudget)
	}
	if r := resultOf(out.Items, "t1"); r == nil || r.Content != "Three things." {
		t.Errorf("task result %+v", r)
	}
}

func TestAResumedChildIsChargedOnlyWhatItSpentSinceItsPause(t *testing.T) {
	const prompt = "Deploy the site."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}, Usage: llm.Usage{InputTokens: 10}},
			{Text: "Deployed.", Usage: llm.Usage{InputTokens: 1}},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "d1", Name: "deploy", Args: map[string]any{}}}, Usage: llm.Usage{InputTokens: 100}},
			{Text: "Deployed it.", Usage: llm.Usage{InputTokens: 50}},
		}},
	)
	runs := 0
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(deployTool(&runs), tk), tk)})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("ship it")}})
	if err != nil || out.Pause == nil {
		t.Fatalf("%v %+v", err, out)
	}
	if out.Usage.InputTokens != 110 {
		t.Errorf("paused parent usage %d input tokens, want 110", out.Usage.InputTokens)
	}
	out2, err := eng.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "t1", Decision: loop.Approve})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out2.Status != loop.StatusCompleted || runs != 1 {
		t.Fatalf("parent %s, deploy ran %d times", out2.Status, runs)
	}
	if out2.Usage.InputTokens != 161 {
		t.Errorf("parent usage %d input tokens, want 161 (10+1 own, 100+50 the child's, each counted once)", out2.Usage.InputTokens)
	}
}
