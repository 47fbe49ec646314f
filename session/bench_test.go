package session_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// BenchmarkConcurrentTurns runs 1,000 threads' turns of 3 rounds (two with
// a no-op tool call) at once on the scheduler, in memory, and reports
// rounds per second.
func BenchmarkConcurrentTurns(b *testing.B) {
	const threads = 1000
	noop := &fakeTool{spec: tool.Spec{Name: "noop", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "ok"}, nil
	}}
	script := scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "noop"}}},
		{Calls: []scripted.Call{{Name: "noop"}}},
		{Text: "done"},
	}}
	for b.Loop() {
		b.StopTimer()
		var mu sync.Mutex
		models := map[string]*scripted.Model{}
		s, err := session.New(session.Config{Store: session.NewMemStore(), Setup: func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
			mu.Lock()
			defer mu.Unlock()
			return loop.Options{Model: models[th.ID], Tools: tool.NewSet(noop)}, nil, nil
		}})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, threads)
		for i := range ids {
			th, _ := s.CreateThread(context.Background(), session.ThreadConfig{})
			ids[i] = th.ID
			models[th.ID] = scripted.New(script, scripted.NoHistoryCheck())
		}
		b.StartTimer()
		start := time.Now()
		turns := make([]string, threads)
		for i, id := range ids {
			t, err := s.Start(context.Background(), id, llm.UserText("go"))
			if err != nil {
				b.Fatal(err)
			}
			turns[i] = t.ID
		}
		for i, id := range ids {
			t, err := s.Wait(context.Background(), id, turns[i])
			if err != nil || t.Status != session.TurnCompleted {
				b.Fatalf("turn %+v %v", t, err)
			}
		}
		b.ReportMetric(float64(threads*3)/time.Since(start).Seconds(), "rounds/s")
		b.StopTimer()
		s.Close(context.Background())
		b.StartTimer()
	}
}

// BenchmarkIdleThreads loads 10,000 threads with one finished turn each and
// reports the heap they hold.
func BenchmarkIdleThreads(b *testing.B) {
	const threads = 10000
	for b.Loop() {
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "hi", Repeat: threads}}}, scripted.NoHistoryCheck())
		s, _ := session.New(session.Config{Store: session.NewMemStore(), Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
			return loop.Options{Model: m}, nil, nil
		}})
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range threads {
			th, _ := s.CreateThread(context.Background(), session.ThreadConfig{})
			t, _ := s.Start(context.Background(), th.ID, llm.UserText("hello"))
			s.Wait(context.Background(), th.ID, t.ID)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/threads, "heap-B/thread")
		s.Close(context.Background())
	}
}
