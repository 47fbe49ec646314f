package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

var askRound = scripted.Round{Text: "One question first.", Calls: []scripted.Call{
	{ID: "ask1", Name: "ask_user", Args: map[string]any{"questions": []map[string]any{{"prompt": "Which city?"}, {"prompt": "Celsius?"}}}},
	call("weather", map[string]any{"city": "Oslo"}),
}}

func TestPauseSerializeResumeInAFreshEngine(t *testing.T) {
	script := scripted.Script{Rounds: []scripted.Round{
		askRound,
		{Text: "Shanghai is 40 C.", Expect: []scripted.Expect{
			{Result: &scripted.ResultExpect{Call: "ask1", Contains: "-> Shanghai"}},
			{Result: &scripted.ResultExpect{Call: "ask1", Contains: "Continue the user's original request"}},
		}},
	}}
	m := scripted.New(script, scripted.RecordRequests())
	tools := tool.NewSet(askTool(), textTool("weather", "40 C"))
	e1, _ := loop.New(loop.Options{Model: m, Tools: tools})
	out, err := e1.Run(t.Context(), loop.Turn{ThreadID: "th1", Input: []llm.Item{llm.UserText("weather?")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != loop.StatusPaused || out.StopReason != loop.StopAwaitingUser || out.Pause == nil {
		t.Fatalf("got %s/%s pause %v", out.Status, out.StopReason, out.Pause)
	}
	p := out.Pause
	if p.CallID != "ask1" || p.TurnID != out.TurnID || len(p.Questions) != 2 || p.Questions[0].ID != "q1" || p.Questions[1].ID != "q2" {
		t.Fatalf("pause %+v", p)
	}
	// The pause tool ran after the other call: its result is still in call order.
	blob, err := json.Marshal(out.State)
	if err != nil {
		t.Fatal(err)
	}

	var st loop.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	e2, _ := loop.New(loop.Options{Model: m, Tools: tools})
	if _, err := e2.Resume(t.Context(), &st, loop.Answer{TurnID: p.TurnID, CallID: "other"}); !errors.As(err, new(*loop.PauseMismatchError)) {
		t.Fatalf("wrong call id: err %v, want PauseMismatchError", err)
	}
	if _, err := e2.Resume(t.Context(), &st, loop.Answer{TurnID: "turn_other", CallID: "ask1"}); !errors.As(err, new(*loop.PauseMismatchError)) {
		t.Fatalf("wrong turn id: err %v, want PauseMismatchError", err)
	}
	out2, err := e2.Resume(t.Context(), &st, loop.Answer{TurnID: p.TurnID, CallID: "ask1", Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "Shanghai"}, {QuestionID: "q2", Text: ""}}})
	if err != nil {
		t.Fatal(err)
	}
	if out2.Status != loop.StatusCompleted || out2.Answer != "Shanghai is 40 C." || out2.Rounds != 2 || out2.ToolSteps != 1 {
		t.Errorf("resumed: %s %q rounds %d steps %d", out2.Status, out2.Answer, out2.Rounds, out2.ToolSteps)
	}
	mustVerify(t, m)
	checkInvariants(t, m)
	// The placeholder was replaced, not added to: one result per call.
	var res []string
	for _, it := range out2.Items {
		if r := it.Result(); r != nil && r.CallID == "ask1" {
			res = append(res, r.Content)
		}
	}
	if len(res) != 1 || !strings.Contains(res[0], "Celsius?\n  -> (skipped)") {
		t.Errorf("ask1 results %q", res)
	}
}

type chanWaiter chan loop.Answer

func (w chanWaiter) Wait(ctx context.Context, p loop.Pause) (loop.Answer, error) {
	select {
	case a := <-w:
		a.TurnID, a.CallID = p.TurnID, p.CallID
		return a, nil
	case <-ctx.Done():
		return loop.Answer{}, ctx.Err()
	}
}

func TestInProcessWaiter(t *testing.T) {
	t.Run("answers and the same turn goes on", func(t *testing.T) {
		w := make(chanWaiter, 1)
		w <- loop.Answer{Text: "Shanghai"}
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{askRound, {Text: "ok", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "ask1", Contains: "User answered: Shanghai"}}}}}},
			loop.Options{Tools: tool.NewSet(askTool(), textTool("weather", "40 C")), Waiter: w}, "q")
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m)
		if out.Status != loop.StatusCompleted || out.Answer != "ok" {
			t.Errorf("got %s %q", out.Status, out.Answer)
		}
	})
	t.Run("times out and the turn ends paused", func(t *testing.T) {
		out, _, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{askRound}},
			loop.Options{Tools: tool.NewSet(askTool(), textTool("weather", "40 C")), Waiter: make(chanWaiter), PauseTimeout: 20 * time.Millisecond}, "q")
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != loop.StatusPaused || out.State == nil {
			t.Errorf("got %s, want paused with state", out.Status)
		}
	})
}

func TestOnlyTheFirstPauseCallIsHonoured(t *testing.T) {
	out, _, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{
		{ID: "a1", Name: "ask_user", Args: map[string]any{"questions": []map[string]any{{"prompt": "A?"}}}},
		{ID: "a2", Name: "ask_user", Args: map[string]any{"questions": []map[string]any{{"prompt": "B?"}}}},
	}}}}, loop.Options{Tools: tool.NewSet(askTool())}, "q")
	if err != nil {
		t.Fatal(err)
	}
	if out.Pause == nil || out.Pause.CallID != "a1" {
		t.Fatalf("pause %+v", out.Pause)
	}
	for _, it := range out.Items {
		if r := it.Result(); r != nil && r.CallID == "a2" && !strings.Contains(strings.ToLower(r.Content), "one call") {
			t.Errorf("second ask_user answered %q", r.Content)
		}
	}
}

func TestTerminatingResultEndsTheTurn(t *testing.T) {
	done := &fakeTool{spec: tool.Spec{Name: "submit", Access: tool.Mutating}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "Submitted: #42", Terminate: true}, nil
	}}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{call("submit", nil)}}}},
		loop.Options{Tools: tool.NewSet(done)}, "q")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.Status != loop.StatusCompleted || out.StopReason != loop.StopTerminatedByTool || out.Answer != "Submitted: #42" {
		t.Errorf("got %s/%s %q", out.Status, out.StopReason, out.Answer)
	}
}
