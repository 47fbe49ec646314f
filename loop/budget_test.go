package loop_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

func TestBudgetsEndThroughTheForcedRound(t *testing.T) {
	tooly := func(u llm.Usage, d time.Duration) scripted.Round {
		return scripted.Round{Calls: []scripted.Call{call("counter", nil)}, Usage: u, Delay: d}
	}
	final := scripted.Round{Text: "best effort", Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}}}
	tests := []struct {
		name   string
		opts   loop.Options
		rounds []scripted.Round
		want   loop.StopReason
		calls  int
	}{
		{
			name:   "tokens",
			opts:   loop.Options{Budget: loop.Budget{Tokens: 250}},
			rounds: []scripted.Round{tooly(llm.Usage{InputTokens: 100, OutputTokens: 20}, 0), tooly(llm.Usage{InputTokens: 120, OutputTokens: 20}, 0), final},
			want:   loop.StopForcedTokens, calls: 3,
		},
		{
			name: "cost",
			opts: loop.Options{Budget: loop.Budget{Cost: 0.01}, Price: loop.Price{InputPerM: 10, OutputPerM: 30}},
			// 1000 in × $10/M + 100 out × $30/M = $0.013 after one round.
			rounds: []scripted.Round{tooly(llm.Usage{InputTokens: 1000, OutputTokens: 100}, 0), final},
			want:   loop.StopForcedCost, calls: 2,
		},
		{
			name:   "time",
			opts:   loop.Options{Budget: loop.Budget{Time: 30 * time.Millisecond}},
			rounds: []scripted.Round{tooly(llm.Usage{}, 40*time.Millisecond), final},
			want:   loop.StopForcedTime, calls: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &events{}
			tt.opts.Tools = tool.NewSet(counterTool("counter"))
			tt.opts.Events = ev
			out, m, err := runTurn(t, scripted.Script{Rounds: tt.rounds}, tt.opts, "q")
			if err != nil {
				t.Fatal(err)
			}
			mustVerify(t, m)
			if out.Status != loop.StatusCompleted || out.StopReason != tt.want || out.Answer != "best effort" {
				t.Errorf("got %s/%s %q, want completed/%s", out.Status, out.StopReason, out.Answer, tt.want)
			}
			if out.Rounds != tt.calls {
				t.Errorf("rounds %d, want %d", out.Rounds, tt.calls)
			}
			if !slices.Contains(ev.warnings(), "forced") {
				t.Errorf("no forced warning: %v", ev.warnings())
			}
		})
	}
}

func TestCostIsComputedFromThePriceTable(t *testing.T) {
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{{Text: "a", Usage: llm.Usage{InputTokens: 2_000_000, CachedInputTokens: 1_000_000, OutputTokens: 1_000_000}}}},
		loop.Options{Price: loop.Price{InputPerM: 2, CachedPerM: 0.5, OutputPerM: 8}}, "q")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if want := 2.0 + 0.5 + 8.0; out.Cost < want-1e-9 || out.Cost > want+1e-9 {
		t.Errorf("cost %g, want %g", out.Cost, want)
	}
}

func TestLoopDetectionMovesToSettlement(t *testing.T) {
	same := scripted.Round{Calls: []scripted.Call{call("weather", map[string]any{"city": "Oslo"})}}
	// Keys in another order are the same call.
	reordered := scripted.Round{Calls: []scripted.Call{{Name: "weather", RawArgs: `{ "city" : "Oslo" }`}}}
	ev := &events{}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		same, reordered, same, // the third identical call trips the detector
		same, same, same, // settlement
		{Text: "it is 40 C", Expect: []scripted.Expect{{Phase: llm.PhaseFinal}}},
	}}, loop.Options{Tools: tool.NewSet(textTool("weather", "40 C")), Events: ev}, "weather?")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.StopReason != loop.StopForcedLoop || out.Rounds != 7 || out.SettlementRounds != 3 {
		t.Errorf("stop %s rounds %d settlement %d, want forced_loop 7 3", out.StopReason, out.Rounds, out.SettlementRounds)
	}
	if !slices.Contains(ev.warnings(), "loop") {
		t.Errorf("warnings %v", ev.warnings())
	}
}

func TestLoopDetectionLetsTheModelFinishInSettlement(t *testing.T) {
	same := scripted.Round{Calls: []scripted.Call{call("weather", map[string]any{"city": "Oslo"})}}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{same, same, same, {Text: "40 C", Expect: []scripted.Expect{{Phase: llm.PhaseSettle}}}}},
		loop.Options{Tools: tool.NewSet(textTool("weather", "40 C"))}, "weather?")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.StopReason != loop.StopFinished || out.Answer != "40 C" {
		t.Errorf("got %s %q", out.StopReason, out.Answer)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	m := scripted.New(scripted.Script{})
	for _, o := range []loop.Options{
		{},
		{Model: m, MaxRounds: 51},
		{Model: m, MaxRounds: -1},
		{Model: m, Budget: loop.Budget{Tokens: -1}},
	} {
		if _, err := loop.New(o); err == nil {
			t.Errorf("New(%+v) accepted bad options", o)
		}
	}
}

func TestToolsAddedMidTurnAreOfferedFromTheNextRound(t *testing.T) {
	set := tool.NewSet()
	loader := &fakeTool{spec: tool.Spec{Name: "load_tools", Access: tool.Mutating}, run: func(context.Context, tool.Call) (tool.Output, error) {
		set.Add(textTool("extra", "x"))
		return tool.Output{Text: "loaded extra"}, nil
	}}
	set.Add(loader)
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("load_tools", nil)}, Expect: []scripted.Expect{{Tools: []string{"load_tools"}}}},
		{Calls: []scripted.Call{call("extra", nil)}, Expect: []scripted.Expect{{Tools: []string{"load_tools", "extra"}}}},
		{Text: "ok"},
	}}, loop.Options{Tools: set}, "q")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if out.ToolSteps != 2 {
		t.Errorf("tool steps %d", out.ToolSteps)
	}
}
