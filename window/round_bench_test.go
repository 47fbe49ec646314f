package window_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/window"
)

// benchThread returns a thread of n items that looks like work: a user
// message, then rounds of an assistant item (reasoning, a preamble, a call)
// and a result of about 300 tokens of code.
func benchThread(n int) []llm.Item {
	h := []llm.Item{llm.UserText("Find where the request retries are configured and explain the backoff.")}
	for i := 0; len(h) < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		var body strings.Builder
		for l := range 25 {
			fmt.Fprintf(&body, "func handler%d_%d(w http.ResponseWriter, r *http.Request) { retry(%d) }\n", i, l, l)
		}
		h = append(h,
			llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartReasoning, Text: fmt.Sprintf("The retry policy may be in file %d; read it.", i)},
				{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "read_file", Args: fmt.Sprintf(`{"path":"internal/http/handler_%d.go"}`, i)}},
			}},
			llm.ToolResult(llm.Result{CallID: id, Name: "read_file", Content: body.String(), Status: llm.ResultOK}),
		)
	}
	return h[:n]
}

// BenchmarkRoundWithWindow is the engine's per-round cost with the window
// on (and off, to compare), as the thread grows: each iteration runs a
// 50-round turn and a 1-round turn on a thread of `items` items; ns/round is
// the marginal cost of a round ((t50 − t1) / 49) — the guard counts only
// the new items, so it must not grow with the thread.
func BenchmarkRoundWithWindow(b *testing.B) {
	const perTurn = 50
	noop := benchTool{}
	for _, bc := range []struct {
		size int
		on   bool
	}{{10, false}, {10, true}, {100, true}, {1000, true}, {2000, false}, {2000, true}} {
		size := bc.size
		b.Run(fmt.Sprintf("items=%d/window=%v", size, bc.on), func(b *testing.B) {
			h := benchThread(size)
			round := scripted.Round{Calls: []scripted.Call{{Name: "noop", RawArgs: "{}"}}}
			long := round
			long.Repeat = perTurn - 1
			scripts := []scripted.Script{
				{Rounds: []scripted.Round{long, {Text: "done"}}},
				{Rounds: []scripted.Round{{Text: "done"}}},
			}
			var w loop.Window
			if bc.on {
				var err error
				if w, err = window.New(window.Config{Model: "gpt-5", Window: 10_000_000}); err != nil {
					b.Fatal(err)
				}
			}
			run := func(s scripted.Script, want int) time.Duration {
				b.StopTimer()
				m := scripted.New(s, scripted.NoHistoryCheck())
				e, err := loop.New(loop.Options{Model: m, MaxRounds: perTurn, Tools: tool.NewSet(noop), LoopThreshold: -1, Window: w})
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
			// The thread's first count (tokenizing every text) belongs to
			// BenchmarkCount; here the window has seen the thread before.
			run(scripts[1], 1)
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

type benchTool struct{}

func (benchTool) Spec() tool.Spec { return tool.Spec{Name: "noop", Access: tool.ReadOnly} }
func (benchTool) Run(context.Context, tool.Call) (tool.Output, error) {
	return tool.Output{Text: "ok"}, nil
}
