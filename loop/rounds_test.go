package loop_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// The worked examples of deeptutor-loop-spec §1.9.
func TestRoundCounts(t *testing.T) {
	always := scripted.Round{Text: "looking", Calls: []scripted.Call{call("counter", nil)}}
	tests := []struct {
		name      string
		maxRounds int
		rounds    []scripted.Round
		wantCalls int
		wantSteps int
		wantSettl int
		wantStop  loop.StopReason
		wantAns   string
	}{
		{
			name:      "direct answer is one call",
			rounds:    []scripted.Round{{Text: "Olá!"}},
			wantCalls: 1, wantStop: loop.StopFinished, wantAns: "Olá!",
		},
		{
			name:      "budget 1, one tool round then an answer: two calls, one settlement round",
			maxRounds: 1,
			rounds: []scripted.Round{
				{Calls: []scripted.Call{call("counter", nil)}},
				{Text: "done", Expect: []scripted.Expect{
					{LastUser: &scripted.TextExpect{Contains: "exploration budget"}},
					{Phase: llm.PhaseSettle},
					{ToolChoice: llm.ToolChoiceAuto},
				}},
			},
			wantCalls: 2, wantSteps: 1, wantSettl: 1, wantStop: loop.StopFinished, wantAns: "done",
		},
		{
			name:      "budget 1 with a model that always calls tools: five calls, four tool steps, forced",
			maxRounds: 1,
			rounds: []scripted.Round{
				always, always, always, always,
				{Text: "what I have", Calls: []scripted.Call{call("counter", nil)}, Expect: []scripted.Expect{
					{ToolChoice: llm.ToolChoiceNone},
					{Tools: []string{"counter"}},
					{Phase: llm.PhaseFinal},
				}},
			},
			wantCalls: 5, wantSteps: 4, wantSettl: 3, wantStop: loop.StopForcedBudget, wantAns: "what I have",
		},
		{
			name:      "default budget 8 then 3 settlement rounds then the forced round: 12 calls at most",
			rounds:    append(slices.Repeat([]scripted.Round{always}, 11), scripted.Round{Text: "forced answer"}),
			wantCalls: 12, wantSteps: 11, wantSettl: 3, wantStop: loop.StopForcedBudget, wantAns: "forced answer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &events{}
			out, m, err := runTurn(t, scripted.Script{Rounds: tt.rounds},
				loop.Options{MaxRounds: tt.maxRounds, Tools: tool.NewSet(counterTool("counter")), Events: ev}, "hi")
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			mustVerify(t, m)
			if got := len(m.Requests()); got != tt.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tt.wantCalls)
			}
			if out.Rounds != tt.wantCalls || out.ToolSteps != tt.wantSteps || out.SettlementRounds != tt.wantSettl {
				t.Errorf("rounds/tool steps/settlement = %d/%d/%d, want %d/%d/%d",
					out.Rounds, out.ToolSteps, out.SettlementRounds, tt.wantCalls, tt.wantSteps, tt.wantSettl)
			}
			if out.Status != loop.StatusCompleted || out.StopReason != tt.wantStop {
				t.Errorf("status %s/%s, want completed/%s", out.Status, out.StopReason, tt.wantStop)
			}
			if out.Answer != tt.wantAns {
				t.Errorf("answer %q, want %q", out.Answer, tt.wantAns)
			}
		})
	}
}

func TestSettleDirectiveIsAppendedOnce(t *testing.T) {
	always := scripted.Round{Calls: []scripted.Call{call("counter", nil)}}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{always, always, always, always, {Text: "x"}}},
		loop.Options{MaxRounds: 1, Tools: tool.NewSet(counterTool("counter"))}, "hi")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	n := 0
	for _, it := range out.Items {
		if it.Origin == llm.OriginDirective && strings.Contains(it.Text(), "exploration budget") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("settle directive appended %d times, want 1", n)
	}
}

func TestForcedRoundIgnoresCalls(t *testing.T) {
	ev := &events{}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("counter", nil)}},
		{Text: "final", Calls: []scripted.Call{call("counter", nil)}},
	}}, loop.Options{MaxRounds: 1, NoSettlement: true, Tools: tool.NewSet(counterTool("counter")), Events: ev}, "hi")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.StopReason != loop.StopForcedBudget || out.Answer != "final" {
		t.Fatalf("got %s %q", out.StopReason, out.Answer)
	}
	last := out.Items[len(out.Items)-1]
	if last.Role != llm.RoleAssistant || len(last.Calls()) != 0 {
		t.Errorf("the forced round's item kept calls: %+v", last)
	}
	if !slices.Contains(ev.warnings(), "calls_ignored") {
		t.Errorf("no calls_ignored warning; warnings %v", ev.warnings())
	}
	// The warning names the forced round, the turn's second.
	for _, w := range ev.of(event.Warning) {
		if w.Code == event.WarnToolIgnored && w.Round != 2 {
			t.Errorf("calls_ignored warning names round %d, want 2 (the forced round)", w.Round)
		}
	}
}

func TestTruncatedRoundContinues(t *testing.T) {
	ev := &events{}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Text: "The answer is forty", Finish: llm.FinishLength},
		{Text: "-two.", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "cut off"}}}},
	}}, loop.Options{Events: ev}, "question")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.Answer != "The answer is forty-two." || out.Rounds != 2 || out.StopReason != loop.StopFinished {
		t.Errorf("answer %q rounds %d stop %s", out.Answer, out.Rounds, out.StopReason)
	}
	// The partial text is recorded as the assistant item it is.
	if got := out.Items[1]; got.Role != llm.RoleAssistant || got.Text() != "The answer is forty" {
		t.Errorf("item 1 = %+v", got)
	}
	if !slices.Contains(ev.warnings(), "truncated") {
		t.Errorf("warnings %v", ev.warnings())
	}
}

func TestRepeatedTruncationIsBoundedByTheBudget(t *testing.T) {
	cut := scripted.Round{Text: "more ", Finish: llm.FinishLength}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{cut, cut, cut, cut, cut}},
		loop.Options{MaxRounds: 1}, "q")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.Rounds != 5 || out.StopReason != loop.StopForcedBudget {
		t.Errorf("rounds %d stop %s, want 5 forced_budget", out.Rounds, out.StopReason)
	}
	if out.Answer != "more more more more more" {
		t.Errorf("answer %q", out.Answer)
	}
}

func TestEmptyFinishIsNudgedOnce(t *testing.T) {
	t.Run("nudge then answer", func(t *testing.T) {
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
			{Thinking: "hmm"},
			{Text: "here", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "no visible answer"}}}},
		}}, loop.Options{}, "q")
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m)
		if out.Answer != "here" || out.Rounds != 2 {
			t.Errorf("answer %q rounds %d", out.Answer, out.Rounds)
		}
	})
	t.Run("twice empty fails with empty_answer, never a canned answer", func(t *testing.T) {
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{{Thinking: "hmm"}, {Text: "  "}}}, loop.Options{}, "q")
		mustVerify(t, m)
		if !errors.Is(err, loop.ErrEmptyAnswer) {
			t.Errorf("err %v, want ErrEmptyAnswer", err)
		}
		if out.Status != loop.StatusFailed || out.StopReason != loop.StopEmptyAnswer || out.Answer != "" {
			t.Errorf("got %s/%s %q", out.Status, out.StopReason, out.Answer)
		}
	})
}

func TestModelErrors(t *testing.T) {
	t.Run("error on round 1 fails the turn with the typed error", func(t *testing.T) {
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{{Error: &scripted.ErrorSpec{Status: 401, Message: "bad key"}}}}, loop.Options{}, "q")
		mustVerify(t, m)
		if !errors.Is(err, llm.Unauthorized) {
			t.Fatalf("err %v, want Unauthorized", err)
		}
		if out.Status != loop.StatusFailed || out.StopReason != loop.StopProviderError || out.Rounds != 0 {
			t.Errorf("got %s/%s rounds %d", out.Status, out.StopReason, out.Rounds)
		}
	})
	t.Run("a later error goes to the forced round", func(t *testing.T) {
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{call("counter", nil)}},
			{Error: &scripted.ErrorSpec{Status: 400, Message: "odd"}},
			{Text: "partial answer", Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}, {LastUser: &scripted.TextExpect{Contains: "A step failed"}}}},
		}}, loop.Options{Tools: tool.NewSet(counterTool("counter"))}, "q")
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m)
		if out.Status != loop.StatusCompleted || out.StopReason != loop.StopForcedError || out.Answer != "partial answer" {
			t.Errorf("got %s/%s %q", out.Status, out.StopReason, out.Answer)
		}
	})
	t.Run("a transient error after visible text surfaces as retryable", func(t *testing.T) {
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{call("counter", nil)}},
			{Text: "partial text", Error: &scripted.ErrorSpec{Kind: llm.StreamInterrupted, After: 1}},
		}})
		e, err := loop.New(loop.Options{Model: llm.WithRetry(m, llm.RetryPolicy{}), Tools: tool.NewSet(counterTool("counter"))})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("q")}})
		var le *llm.Error
		if !errors.As(err, &le) || !le.Shown || le.Kind != llm.StreamInterrupted {
			t.Fatalf("err %v, want a shown StreamInterrupted", err)
		}
		if out.Status != loop.StatusFailed || out.StopReason != loop.StopProviderError {
			t.Errorf("got %s/%s", out.Status, out.StopReason)
		}
	})
}

func TestRetryBeforeAnythingShownIsInvisible(t *testing.T) {
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Error: &scripted.ErrorSpec{Status: 503}},
		{Error: &scripted.ErrorSpec{Status: 429, RetryAfter: 1}},
		{Text: "fine"},
	}}, scripted.RecordRequests())
	ev := &events{}
	sleeps := 0
	model := llm.WithRetry(m, llm.RetryPolicy{Sleep: func(_ context.Context, _ time.Duration) error { sleeps++; return nil }})
	e, err := loop.New(loop.Options{Model: model, Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("q")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "fine" || out.Rounds != 1 || sleeps != 2 {
		t.Errorf("answer %q rounds %d sleeps %d", out.Answer, out.Rounds, sleeps)
	}
	if got := len(ev.of("retry")); got != 2 {
		t.Errorf("%d retry events, want 2", got)
	}
}

// Rounds with nothing at all in them (no text, no reasoning, cut by the
// limit) still count: the hard ceiling MaxRounds + 3 + 1 holds.
func TestEmptyRoundsCountTowardTheCeiling(t *testing.T) {
	cut := scripted.Round{Finish: llm.FinishLength}
	out, m, err := runTurn(t, scripted.Script{Rounds: slices.Repeat([]scripted.Round{cut}, 5)},
		loop.Options{MaxRounds: 1}, "q")
	mustVerify(t, m)
	if got := len(m.Requests()); got != 5 || out.Rounds != 5 {
		t.Errorf("model calls %d, rounds %d; want 5 and 5 (1 + 3 settlement + 1 forced)", got, out.Rounds)
	}
	if out.Status != loop.StatusFailed || out.StopReason != loop.StopEmptyAnswer || !errors.Is(err, loop.ErrEmptyAnswer) {
		t.Errorf("got %s/%s %v, want failed/empty_answer", out.Status, out.StopReason, err)
	}
}

func TestTwoEmptyRoundsCountAsTwo(t *testing.T) {
	out, m, _ := runTurn(t, scripted.Script{Rounds: []scripted.Round{{}, {}}}, loop.Options{}, "q")
	mustVerify(t, m)
	if out.Rounds != 2 || out.StopReason != loop.StopEmptyAnswer {
		t.Errorf("rounds %d stop %s, want 2 empty_answer", out.Rounds, out.StopReason)
	}
}
