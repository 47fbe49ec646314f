package loop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// noopTool does nothing, quickly.
var noopTool = &fakeTool{spec: tool.Spec{Name: "noop", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
	return tool.Output{Text: "ok"}, nil
}}

// BenchmarkRound measures the engine's overhead per round: the scripted
// model streams one no-op call per round, the dispatcher runs it, the result
// joins the history. The thread already holds `history` rounds; the cost of
// a round must not grow with it (DESIGN §11: ≤ 5 µs/round, ≤ 1.5× from 100
// to 1,000 rounds: never copy or re-walk the whole history per round).
//
// A turn has at most 50 exploration rounds, so each iteration runs a
// 50-round turn and a 1-round turn on the same history: ns/round is the
// marginal cost of a round ((t50 − t1) / 49), setup/turn what a turn costs
// before its first round (copying the thread's context once).
func BenchmarkRound(b *testing.B) {
	const perTurn = 50
	for _, history := range []int{100, 1000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			var h []llm.Item
			h = append(h, llm.UserText("start"))
			for i := range history {
				id := fmt.Sprintf("old_%d", i)
				h = append(h, llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "noop", Args: "{}"}}}})
				h = append(h, llm.ToolResult(llm.Result{CallID: id, Name: "noop", Content: "ok", Status: llm.ResultOK}))
			}
			round := scripted.Round{Calls: []scripted.Call{{Name: "noop", RawArgs: "{}"}}}
			long := round
			long.Repeat = perTurn - 1
			scripts := []scripted.Script{
				{Rounds: []scripted.Round{long, {Text: "done"}}},
				{Rounds: []scripted.Round{{Text: "done"}}},
			}
			run := func(s scripted.Script, want int) time.Duration {
				b.StopTimer()
				m := scripted.New(s, scripted.NoHistoryCheck())
				e, err := loop.New(loop.Options{Model: m, MaxRounds: perTurn, Tools: tool.NewSet(noopTool), LoopThreshold: -1})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				out, err := e.Run(context.Background(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("go")}})
				d := time.Since(t0)
				if err != nil || out.Rounds != want {
					b.Fatalf("rounds %d err %v", out.Rounds, err)
				}
				return d
			}
			b.ReportAllocs()
			var t50, t1 time.Duration
			n := 0
			for b.Loop() {
				t50 += run(scripts[0], perTurn)
				t1 += run(scripts[1], 1)
				n++
			}
			b.ReportMetric(float64((t50-t1).Nanoseconds())/float64(n*(perTurn-1)), "ns/round")
			b.ReportMetric(float64(t1.Nanoseconds())/float64(n), "ns-setup+1round/turn")
		})
	}
}

// sleepTool is a read-only tool that takes d.
func sleepTool(name string, d time.Duration) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: name, Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		select {
		case <-time.After(d):
			return tool.Output{Text: "done"}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}}
}

// BenchmarkParallelRound: one round of 8 calls of a 200 ms read-only tool,
// then the answer. The turn's wall time is the round's (target ≤ 220 ms).
func BenchmarkParallelRound(b *testing.B) {
	calls := make([]scripted.Call, 8)
	for i := range calls {
		calls[i] = scripted.Call{Name: "slow", Args: map[string]any{"i": i}}
	}
	script := scripted.Script{Rounds: []scripted.Round{{Calls: calls}, {Text: "done"}}}
	e := func() *loop.Engine {
		e, err := loop.New(loop.Options{Model: scripted.New(script, scripted.NoHistoryCheck()), Tools: tool.NewSet(sleepTool("slow", 200*time.Millisecond))})
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	b.ReportAllocs()
	var total time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		eng := e()
		b.StartTimer()
		t0 := time.Now()
		out, err := eng.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("go")}})
		total += time.Since(t0)
		n++
		if err != nil || out.ToolSteps != 1 {
			b.Fatalf("%v %+v", err, out)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/turn")
}

// BenchmarkEarlyStart: the model keeps streaming for 1 s after a call's
// arguments are complete; the tool (50 ms) must be done long before the
// stream ends. Reports how much earlier it finished.
func BenchmarkEarlyStart(b *testing.B) {
	script := scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "slow", RawArgs: "{}"}}, Hold: time.Second},
		{Text: "done"},
	}}
	var lead time.Duration
	n := 0
	for b.Loop() {
		var toolEnd, roundEnd time.Time
		h := eventFunc(func(e event.Event) {
			switch {
			case e.Type == event.Result:
				toolEnd = e.Time
			case e.Type == event.RoundCompleted && e.Round == 1:
				roundEnd = e.Time
			}
		})
		eng, err := loop.New(loop.Options{Model: scripted.New(script, scripted.NoHistoryCheck()), Tools: tool.NewSet(sleepTool("slow", 50*time.Millisecond)), Events: h})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("go")}}); err != nil {
			b.Fatal(err)
		}
		if !toolEnd.Before(roundEnd) {
			b.Fatalf("the tool finished at %s, after the stream ended at %s", toolEnd, roundEnd)
		}
		lead += roundEnd.Sub(toolEnd)
		n++
	}
	b.ReportMetric(float64(lead.Milliseconds())/float64(n), "ms-before-stream-end")
}

type eventFunc func(event.Event)

func (f eventFunc) Handle(e event.Event) { f(e) }
