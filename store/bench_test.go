package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

func benchStore(b *testing.B, sync Sync) *Store {
	b.Helper()
	s, err := Config{Sync: sync}.Open(context.Background(), filepath.Join(b.TempDir(), "rein.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchItem is a typical item: an assistant message with a call, or the
// result that answers it.
func benchItem(turn string, i int) llm.Item {
	id := turn + "." + strconv.Itoa(i)
	if i%2 == 0 {
		return assistant(turn, id, "Let me read the config to see which port the server uses.", llm.Call{ID: "call_" + id, Name: "read_file", Args: `{"path":"config/server.toml"}`})
	}
	return result(turn, id, "call_"+turn+"."+strconv.Itoa(i-1), "[server]\nport = 8080\nhost = \"127.0.0.1\"\n# the admin port is separate\nadmin_port = 9090\n", llm.ResultOK)
}

func syncName(s Sync) string {
	if s == SyncNormal {
		return "normal"
	}
	return "full"
}

// One turn appending items one after another: each Record returns after its
// own commit.
func BenchmarkAppendSequential(b *testing.B) {
	for _, sync := range []Sync{SyncFull, SyncNormal} {
		b.Run(syncName(sync), func(b *testing.B) {
			s := benchStore(b, sync)
			thread := newThread(b, s)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				if err := s.Record(ctx, thread, benchItem("t", i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "items/s")
		})
	}
}

// Many turns appending at once, each on its own thread: each Record still
// returns only after the commit holding its item, but concurrent items
// share commits.
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, sync := range []Sync{SyncFull, SyncNormal} {
		for _, writers := range []int{8, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", syncName(sync), writers), func(b *testing.B) {
				s := benchStore(b, sync)
				threads := make([]string, writers)
				for i := range threads {
					threads[i] = newThread(b, s)
				}
				var next atomic.Int64
				ctx := context.Background()
				b.ReportAllocs()
				b.SetParallelism((writers + 1) / 2) // RunParallel starts this × GOMAXPROCS (2) goroutines
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					w := int(next.Add(1)-1) % writers
					for i := 0; pb.Next(); i++ {
						if err := s.Record(ctx, threads[w], benchItem("t"+strconv.Itoa(w), i)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "items/s")
			})
		}
	}
}

// Opening a thread of 10,000 items: normalization, the thread, its turns
// and every item decoded.
func BenchmarkLoad10000Items(b *testing.B) {
	s := benchStore(b, SyncNormal)
	thread := newThread(b, s)
	ctx := context.Background()
	const n = 10000
	turn := ""
	for i := range n {
		if i%100 == 0 {
			if turn != "" {
				s.finishOutcome(ctx, finished(turn))
			}
			tn, err := s.startTurn(ctx, thread, "")
			if err != nil {
				b.Fatal(err)
			}
			turn = tn.ID
		}
		if err := s.Record(ctx, thread, benchItem(turn, i)); err != nil {
			b.Fatal(err)
		}
	}
	s.finishOutcome(ctx, finished(turn))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap, err := s.Load(ctx, thread)
		if err != nil || len(snap.Items) != n {
			b.Fatalf("loaded %v items, %v", len(snap.Items), err)
		}
	}
}

// A turn's start and end on a thread with history: the claim (one running
// turn per thread, checked in the store) and the finish, each one commit.
func BenchmarkTurnStartFinish(b *testing.B) {
	s := benchStore(b, SyncNormal)
	thread := newThread(b, s)
	ctx := context.Background()
	for i := range 1000 {
		if err := s.Record(ctx, thread, benchItem("old", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tn, err := s.startTurn(ctx, thread, "")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.finishOutcome(ctx, finished(tn.ID)); err != nil {
			b.Fatal(err)
		}
	}
}
