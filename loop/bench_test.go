package loop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// joins the history. The thread already holds `history` rounds, so the cost
// must stay flat as it grows (DESIGN §11: ≤ 5 µs/round, ≤ 1.5× from 100 to
// 1,000 rounds).
func BenchmarkRound(b *testing.B) {
	const perTurn = 50
	for _, history := range []int{100, 1000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			// A thread of `history` earlier rounds: call + result each.
			var h []llm.Item
			h = append(h, llm.UserText("start"))
			for i := range history {
				id := fmt.Sprintf("old_%d", i)
				h = append(h, llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "noop", Args: "{}"}}}})
				h = append(h, llm.ToolResult(llm.Result{CallID: id, Name: "noop", Content: "ok", Status: llm.ResultOK}))
			}
			round := scripted.Round{Calls: []scripted.Call{{Name: "noop", RawArgs: "{}"}}, Repeat: perTurn - 1}
			script := scripted.Script{Rounds: []scripted.Round{round, {Text: "done"}}}
			b.ReportAllocs()
			b.ResetTimer()
			var rounds int
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				m := scripted.New(script, scripted.NoHistoryCheck())
				e, err := loop.New(loop.Options{Model: m, MaxRounds: perTurn, Tools: tool.NewSet(noopTool), LoopThreshold: -1})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				out, err := e.Run(context.Background(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("go")}})
				elapsed += time.Since(t0)
				if err != nil || out.Rounds != perTurn {
					b.Fatalf("rounds %d err %v", out.Rounds, err)
				}
				rounds += out.Rounds
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(rounds), "ns/round")
		})
	}
}
