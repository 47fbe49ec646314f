package session_test

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// BenchmarkConcurrentTurnsOverHTTP runs turns of 3 rounds (two rounds
// with a no-op tool call, then the answer) on many threads at once through
// the scheduler, each thread's model being rein's Chat Completions adapter
// streaming from the mock Chat server over loopback HTTP (DESIGN §11: 1,000
// concurrent turns without errors; report rounds/s).
//
// The mock server plays its rounds in the order requests arrive, so each
// thread has its own server instance: with one shared server a thread could
// be handed another thread's answer round and end early. The servers run in
// this process and their CPU is part of what is measured.
//
// Besides rounds/s it reports the round overhead: the time from the end of
// one model stream to the start of the turn's next model request (tool
// dispatch, journaling, steer check, scheduling), p50 and p99 over all
// rounds after the first; and the start latency, from Start to the first
// model request. On 2 cores with 1,000 turns in flight both are dominated
// by waiting for a core.
func BenchmarkConcurrentTurnsOverHTTP(b *testing.B) {
	for _, c := range []struct {
		name    string
		threads int
		sqlite  bool
	}{
		{"threads=1/mem", 1, false},
		{"threads=1000/mem", 1000, false},
		{"threads=1000/sqlite", 1000, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchTurnsOverHTTP(b, c.threads, c.sqlite) })
	}
}

// httpScript is one thread's turn as the mock server plays it.
var httpScript = []testkit.Round{
	{Text: "Looking.", Calls: []testkit.MockCall{{Name: "noop", Args: `{"n":1}`}}, InputTokens: 40, OutputTokens: 8},
	{Calls: []testkit.MockCall{{Name: "noop", Args: `{"n":2}`}}, InputTokens: 60, OutputTokens: 8},
	{Text: "All done.", InputTokens: 80, OutputTokens: 4},
}

func benchTurnsOverHTTP(b *testing.B, threads int, sqlite bool) {
	noop := &fakeTool{spec: tool.Spec{Name: "noop", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "ok"}, nil
	}}
	servers := make([]*testkit.MockServer, threads)
	for i := range servers {
		servers[i] = testkit.NewChatServer(b)
	}
	var (
		gaps, starts []time.Duration
		rounds       int
		wall         time.Duration
	)
	for b.Loop() {
		b.StopTimer()
		var st session.Store = session.NewMemStore()
		var db *store.Store
		if sqlite {
			var err error
			if db, err = store.Open(context.Background(), filepath.Join(b.TempDir(), "rein.db")); err != nil {
				b.Fatal(err)
			}
			st = session.NewSQLStore(db)
		}
		var mu sync.Mutex
		models := map[string]*timedModel{}
		s, err := session.New(session.Config{Store: st, Setup: func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
			mu.Lock()
			defer mu.Unlock()
			return loop.Options{Model: models[th.ID], Tools: tool.NewSet(noop)}, nil, nil
		}})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, threads)
		for i := range ids {
			th, err := s.CreateThread(context.Background(), session.ThreadConfig{})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = th.ID
			servers[i].ForgetRequests()
			servers[i].Push(httpScript...)
			models[th.ID] = &timedModel{m: openai.NewChat(openai.Options{APIKey: "k", BaseURL: servers[i].BaseURL(), Model: "mock"})}
		}
		b.StartTimer()
		begin := time.Now()
		turns := make([]session.Turn, threads)
		for i, id := range ids {
			models[id].started = time.Now()
			if turns[i], err = s.Start(context.Background(), id, llm.UserText("go")); err != nil {
				b.Fatal(err)
			}
		}
		errs := 0
		for i, id := range ids {
			t, err := s.Wait(context.Background(), id, turns[i].ID)
			if err != nil || t.Status != session.TurnCompleted || t.Rounds != len(httpScript) {
				errs++
				if errs <= 3 {
					b.Errorf("thread %d: turn %s, %d rounds, %s %v", i, t.Status, t.Rounds, t.Error, err)
				}
			}
			rounds += t.Rounds
		}
		wall += time.Since(begin)
		b.StopTimer()
		if errs > 0 {
			b.Fatalf("%d of %d turns failed", errs, threads)
		}
		for _, m := range models {
			starts = append(starts, m.begins[0].Sub(m.started))
			for k := 1; k < len(m.begins); k++ {
				gaps = append(gaps, m.begins[k].Sub(m.ends[k-1]))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Close(ctx); err != nil {
			b.Error(err)
		}
		cancel()
		if db != nil {
			db.Close()
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(rounds)/wall.Seconds(), "rounds/s")
	b.ReportMetric(0, "errors")
	b.ReportMetric(micros(percentile(gaps, 0.50)), "gap-p50-µs")
	b.ReportMetric(micros(percentile(gaps, 0.99)), "gap-p99-µs")
	b.ReportMetric(micros(percentile(starts, 0.99)), "start-p99-µs")
	b.Logf("%d turns, %d rounds, %d gaps; start p50 %v", len(starts), rounds, len(gaps), percentile(starts, 0.5))
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// percentile returns the p-quantile of ds (nearest rank).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// timedModel records when each model request begins and when its stream
// ends. One turn of a thread runs at a time and its rounds one after
// another, so the slices need no lock.
type timedModel struct {
	m       llm.Model
	started time.Time // when the turn was asked for
	begins  []time.Time
	ends    []time.Time
}

func (t *timedModel) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	t.begins = append(t.begins, time.Now())
	s, err := t.m.Stream(ctx, req)
	if err != nil {
		t.ends = append(t.ends, time.Now())
		return nil, err
	}
	return &timedStream{Stream: s, t: t}, nil
}

type timedStream struct {
	llm.Stream
	t    *timedModel
	done bool
}

func (s *timedStream) Recv() (llm.Event, error) {
	e, err := s.Stream.Recv()
	if err == io.EOF && !s.done {
		s.done = true
		s.t.ends = append(s.t.ends, time.Now())
	}
	return e, err
}
