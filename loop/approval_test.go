package loop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// riskyTool needs approval and counts its runs.
func riskyTool(runs *atomic.Int32) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "deploy", Access: tool.Exclusive, NeedsApproval: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		runs.Add(1)
		return tool.Output{Text: "deployed"}, nil
	}}
}

func TestApprovals(t *testing.T) {
	deployRound := scripted.Round{Calls: []scripted.Call{{ID: "d1", Name: "deploy"}}}
	t.Run("approve runs the call and the model sees its result", func(t *testing.T) {
		var runs atomic.Int32
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{deployRound,
			{Text: "done", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "d1", Equals: "deployed"}}}}}})
		e, _ := loop.New(loop.Options{Model: m, Tools: tool.NewSet(riskyTool(&runs))})
		out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("ship it")}})
		if err != nil || out.Status != loop.StatusPaused || out.Pause.Kind != tool.PauseApproval || out.Pause.Tool != "deploy" {
			t.Fatalf("got %v %+v", err, out.Pause)
		}
		if runs.Load() != 0 {
			t.Fatal("the tool ran before approval")
		}
		if _, err := e.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "d1"}); !errors.Is(err, loop.ErrNoDecision) {
			t.Errorf("an approval without a decision: err %v", err)
		}
		out, err = e.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "d1", Decision: loop.Approve})
		if err != nil || out.Answer != "done" || runs.Load() != 1 {
			t.Fatalf("resume: %v %q runs %d", err, out.Answer, runs.Load())
		}
		mustVerify(t, m)
		if err := llm.CheckHistory(out.Items); err != nil {
			t.Error(err)
		}
	})
	t.Run("deny: the model sees the denial and the tool never runs", func(t *testing.T) {
		var runs atomic.Int32
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{deployRound,
			{Text: "ok, not deploying", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "d1", Contains: "denied", Status: llm.ResultError}}}}}})
		e, _ := loop.New(loop.Options{Model: m, Tools: tool.NewSet(riskyTool(&runs))})
		out, _ := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("ship it")}})
		out, err := e.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "d1", Decision: loop.Deny})
		if err != nil || out.Status != loop.StatusCompleted || runs.Load() != 0 {
			t.Fatalf("got %v %s runs %d", err, out.Status, runs.Load())
		}
		mustVerify(t, m)
	})
	t.Run("approve for the thread: not asked again", func(t *testing.T) {
		var runs atomic.Int32
		w := make(chanWaiter, 1)
		w <- loop.Answer{Decision: loop.ApproveThread}
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{deployRound, {Calls: []scripted.Call{{ID: "d2", Name: "deploy", Args: map[string]any{}}}}, {Text: "twice"}, {Text: "third"}}})
		e, _ := loop.New(loop.Options{Model: m, Tools: tool.NewSet(riskyTool(&runs)), Waiter: w})
		out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("ship it twice")}})
		if err != nil || out.Answer != "twice" || runs.Load() != 2 {
			t.Fatalf("got %v %q runs %d", err, out.Answer, runs.Load())
		}
		if len(out.Approved) != 1 || out.Approved[0] != "deploy" {
			t.Fatalf("approved %v", out.Approved)
		}
		// The next turn of the thread keeps the approval.
		m2 := scripted.New(scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{{ID: "d3", Name: "deploy"}}}, {Text: "again"}}})
		e2, _ := loop.New(loop.Options{Model: m2, Tools: tool.NewSet(riskyTool(&runs))})
		out2, err := e2.Run(t.Context(), loop.Turn{History: out.Items, Approved: out.Approved, Input: []llm.Item{llm.UserText("again")}})
		if err != nil || out2.Status != loop.StatusCompleted || runs.Load() != 3 {
			t.Fatalf("next turn: %v %s runs %d", err, out2.Status, runs.Load())
		}
	})
	t.Run("two approvals in one round are asked one after the other", func(t *testing.T) {
		var runs atomic.Int32
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{{ID: "a", Name: "deploy", Args: map[string]any{"env": "a"}}, {ID: "b", Name: "deploy", Args: map[string]any{"env": "b"}}}},
			{Text: "one of two", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "b", Contains: "denied"}}, {Result: &scripted.ResultExpect{Call: "a", Equals: "deployed"}}}},
		}})
		e, _ := loop.New(loop.Options{Model: m, Tools: tool.NewSet(riskyTool(&runs))})
		out, _ := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("go")}})
		if out.Pause == nil || out.Pause.CallID != "a" {
			t.Fatalf("first pause %+v", out.Pause)
		}
		out, err := e.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "a", Decision: loop.Approve})
		if err != nil || out.Status != loop.StatusPaused || out.Pause.CallID != "b" {
			t.Fatalf("second pause: %v %+v", err, out.Pause)
		}
		out, err = e.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "b", Decision: loop.Deny})
		if err != nil || out.Answer != "one of two" || runs.Load() != 1 {
			t.Fatalf("got %v %q runs %d", err, out.Answer, runs.Load())
		}
		mustVerify(t, m)
	})
}

func TestApprovalPolicies(t *testing.T) {
	write := &fakeTool{spec: tool.Spec{Name: "write", Access: tool.Mutating}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "written"}, nil
	}}
	read := textTool("read", "content")
	var runs atomic.Int32
	tests := []struct {
		policy    tool.Policy
		call      string
		wantPause bool
		wantText  string
	}{
		{tool.PolicyNever, "deploy", false, "approval policy never asks"},
		{tool.PolicyOnRequest, "write", false, "written"},
		{tool.PolicyOnRequest, "deploy", true, ""},
		{tool.PolicyUntrusted, "write", true, ""},
		{tool.PolicyUntrusted, "read", false, "content"},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/"+tt.call, func(t *testing.T) {
			rounds := []scripted.Round{{Calls: []scripted.Call{{ID: "c1", Name: tt.call}}}}
			if !tt.wantPause {
				rounds = append(rounds, scripted.Round{Text: "ok", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "c1", Contains: tt.wantText}}}})
			}
			m := scripted.New(scripted.Script{Rounds: rounds})
			e, err := loop.New(loop.Options{Model: m, Policy: tt.policy, Tools: tool.NewSet(write, read, riskyTool(&runs))})
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("go")}})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Status == loop.StatusPaused; got != tt.wantPause {
				t.Errorf("paused %v, want %v", got, tt.wantPause)
			}
			mustVerify(t, m)
		})
	}
	if _, err := loop.New(loop.Options{Model: scripted.New(scripted.Script{}), Policy: "sometimes"}); err == nil {
		t.Error("an unknown policy was accepted")
	}
}
