package loop_test

import (
	"context"
	"fmt"
	"io"
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
// 50-round turn and a 2-round turn (one call, then the answer) on the same
// history: ns/round is the marginal cost of a round ((t50 − t2) / 48), what
// a turn costs besides its rounds (copying the thread's context, the
// thread's call ids, built at a turn's first call) being the same in both.
// BenchmarkTurnStart measures that part.
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
				{Rounds: []scripted.Round{round, {Text: "done"}}},
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
			var t50, t2 time.Duration
			n := 0
			for b.Loop() {
				t50 += run(scripts[0], perTurn)
				t2 += run(scripts[1], 2)
				n++
			}
			b.ReportMetric(float64((t50-t2).Nanoseconds())/float64(n*(perTurn-2)), "ns/round")
			b.ReportMetric(float64(t2.Nanoseconds())/float64(n), "ns/2-round-turn")
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

// turnModel is a model without state, so one engine runs any number of
// turns: it answers at once, or (call) first calls noop with the id
// "call_0" every time, as servers that number calls per response do, and
// answers once the call's result is in.
type turnModel struct {
	call bool
	// reads: the model reads Request.History (llm.HistoryReader).
	reads bool
}

func (m turnModel) ReadsHistory() bool { return m.reads }

var (
	answerResponse = llm.Response{Parts: []llm.Part{{Kind: llm.PartText, Text: "done"}}, Finish: llm.FinishStop}
	call0          = llm.Call{ID: "call_0", Name: "noop", Args: "{}"}
	callResponse   = llm.Response{Parts: []llm.Part{{Kind: llm.PartCall, Call: &call0}}, Finish: llm.FinishToolCalls}
)

func (m turnModel) Stream(_ context.Context, req *llm.Request) (llm.Stream, error) {
	if m.call && req.At(req.Len()-1).Role != llm.RoleTool {
		return &turnStream{evs: []llm.Event{
			{Kind: llm.EventCallDone, Call: &call0},
			{Kind: llm.EventDone, Response: &callResponse},
		}}, nil
	}
	return &turnStream{evs: []llm.Event{
		{Kind: llm.EventText, Delta: "done"},
		{Kind: llm.EventDone, Response: &answerResponse},
	}}, nil
}

type turnStream struct{ evs []llm.Event }

func (s *turnStream) Recv() (llm.Event, error) {
	if len(s.evs) == 0 {
		return llm.Event{}, io.EOF
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

func (s *turnStream) Close() error { return nil }

// roundsHistory is a thread of n rounds of one no-op call each.
func roundsHistory(n int) []llm.Item {
	h := make([]llm.Item, 0, 1+2*n)
	h = append(h, llm.UserText("start"))
	for i := range n {
		id := fmt.Sprintf("old_%d", i)
		h = append(h, llm.Item{ID: fmt.Sprintf("t0.%d", 2*i+1), Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "noop", Args: "{}"}}}})
		it := llm.ToolResult(llm.Result{CallID: id, Name: "noop", Content: "ok", Status: llm.ResultOK})
		it.ID = fmt.Sprintf("t0.%d", 2*i+2)
		h = append(h, it)
	}
	return h
}

// BenchmarkTurnStart measures a short turn on a thread that already holds
// `history` rounds of one call each: a 1-round turn (answer), or a 2-round
// one whose model calls noop with the id call_0 every turn (call), which
// needs the thread's call ids. "copied": every turn is given the same
// History and no Carry, and the model does not read Request.History, so
// the turn copies the thread's context; "apart": the same with a model
// that reads it, so the context is sent from the caller's History as it
// is; "carried": the thread goes on turn after turn, each given the
// previous turn's Carry (the thread grows by every turn's items). What a
// turn costs must not grow with the thread when carried or apart.
func BenchmarkTurnStart(b *testing.B) {
	for _, history := range []int{0, 1000} {
		for _, mode := range []string{"copied", "apart", "carried"} {
			for _, model := range []string{"answer", "call"} {
				b.Run(fmt.Sprintf("history=%d/%s/%s", history, mode, model), func(b *testing.B) {
					h := roundsHistory(history)
					m := turnModel{call: model == "call", reads: mode == "apart"}
					e, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(noopTool), LoopThreshold: -1})
					if err != nil {
						b.Fatal(err)
					}
					want := 1
					if model == "call" {
						want = 2
					}
					input := []llm.Item{llm.UserText("go")}
					ctx := context.Background()
					var carry *loop.Carry
					b.ReportAllocs()
					for b.Loop() {
						out, err := e.Run(ctx, loop.Turn{History: h, Input: input, Carry: carry})
						if err != nil || out.Rounds != want {
							b.Fatalf("rounds %d err %v", out.Rounds, err)
						}
						if mode == "carried" {
							h, carry = append(h, out.Items...), out.Carry
						}
					}
				})
			}
		}
	}
}
