package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// BenchmarkParallelRound: 8 calls of a 200 ms read-only tool in one round
// (DESIGN §11: ≤ 220 ms). ms/round is the wall time of a round.
func BenchmarkParallelRound(b *testing.B) {
	slow := &fake{spec: tool.Spec{Name: "slow", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		time.Sleep(200 * time.Millisecond)
		return tool.Output{Text: "done"}, nil
	}}
	d := New(Config{Tools: tool.NewSet(slow)})
	cs := make([]llm.Call, 8)
	for i := range cs {
		cs[i] = llm.Call{ID: fmt.Sprintf("c%d", i), Name: "slow", Args: fmt.Sprintf(`{"n":%d}`, i)}
	}
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		r := d.Begin(context.Background(), RoundInfo{})
		for _, c := range cs {
			r.Add(c)
		}
		batch := r.Finish()
		total += time.Since(start)
		if batch.Results[7].Status != llm.ResultOK {
			b.Fatal(batch.Results[7])
		}
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "ms/round")
}

// BenchmarkNoopRound is the dispatcher's overhead per round: one call of a
// tool that does nothing, with a schema to check.
func BenchmarkNoopRound(b *testing.B) {
	noop := &fake{spec: tool.Spec{Name: "noop", Access: tool.ReadOnly,
		Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
			return tool.Output{Text: "ok"}, nil
		}}
	d := New(Config{Tools: tool.NewSet(noop)})
	c := llm.Call{ID: "c0", Name: "noop", Args: `{"path":"a.go"}`}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		r := d.Begin(ctx, RoundInfo{})
		r.Add(c)
		if batch := r.Finish(); batch.Results[0].Status != llm.ResultOK {
			b.Fatal(batch.Results[0])
		}
	}
}
