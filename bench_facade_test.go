package rein_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
)

// chunked plays scripts of a bounded length one after another: a script
// of every turn of a long benchmark is past the scripted model's bound.
type chunked struct{ m llm.Model }

func (c *chunked) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	return c.m.Stream(ctx, req)
}

// turnsScript is n turns of a call of echo, then the answer "done".
func turnsScript(b *testing.B, n int) llm.Model {
	var s strings.Builder
	s.WriteString("rounds:\n")
	for i := range n {
		fmt.Fprintf(&s, "  - calls: [{id: c%d, name: echo, args: {text: t}}]\n  - text: done\n", i)
	}
	m, err := scripted.Parse([]byte(s.String()))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkThreadTurn is one library turn (a call of a read-only tool,
// then the answer) on a new thread: what the facade adds over the engine
// (the session runtime: a thread made, a claimed, journaled turn in the
// memory store, its trace kept, its outcome handed back). cpu-ns/op is
// the process's CPU time a turn (the garbage collector's included), which
// a loaded machine inflates less than ns/op.
//
//	go test -run '^$' -bench BenchmarkThreadTurn -benchmem .
func BenchmarkThreadTurn(b *testing.B) {
	const chunk = 1000
	m := &chunked{m: turnsScript(b, chunk)}
	a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{echo}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	from := processCPU()
	for i := range b.N {
		if i > 0 && i%chunk == 0 {
			b.StopTimer()
			cpu += processCPU() - from
			m.m = turnsScript(b, chunk)
			from = processCPU()
			b.StartTimer()
		}
		if out, err := a.NewThread().Run(ctx, "go"); err != nil || out.Answer != "done" {
			b.Fatalf("%v %+v", err, out)
		}
	}
	cpu += processCPU() - from
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
