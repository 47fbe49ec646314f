package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/reinhq/rein/bench/peer/mockchat"
)

func TestMain(m *testing.M) {
	mockchat.ServeIfChild()
	serveClientIfChild()
	os.Exit(m.Run())
}

// TestWorkloads runs every workload once through every engine that has
// it; each turn checks its own outcome.
func TestWorkloads(t *testing.T) {
	srv, err := mockchat.StartServer(perTurn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			var ts []turn
			if e.scripted != nil {
				for _, h := range []int{0, 3} {
					for _, r := range []int{1, 5, perTurn} {
						tr, err := e.scripted(h, r)
						if err != nil {
							t.Fatal(err)
						}
						ts = append(ts, tr)
					}
				}
			}
			if e.parallel != nil {
				tr, err := e.parallel(3, time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, tr)
			}
			for i, tr := range ts {
				if err := tr(ctx); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
			}
			if e.client != nil {
				// The client runs a turn to warm up, then two more: the
				// mock keeps no state.
				c, err := e.client(srv.URL+"/v1", perTurn)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if m, err := c.Run(2); err != nil || m.Turns != 2 || m.Wall <= 0 {
					t.Fatalf("client: %+v, %v", m, err)
				}
			}
		})
	}
}

// BenchmarkRound: one iteration is one turn of rounds rounds against the
// in-memory model (rounds-1 rounds of one noop call, then the answer);
// preparing the turn is not timed. ns/round is ns/op over rounds; the
// marginal cost of a round is (rounds=50 − rounds=1) / 49, which the
// command computes.
func BenchmarkRound(b *testing.B) {
	for _, e := range engines {
		if e.scripted == nil {
			continue
		}
		for _, history := range []int{0, 1000} {
			for _, rounds := range []int{1, perTurn} {
				b.Run(e.name+"/history="+itoa(history)+"/rounds="+itoa(rounds), func(b *testing.B) {
					benchTurns(b, func() (turn, error) { return e.scripted(history, rounds) })
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rounds), "ns/round")
				})
			}
		}
	}
}

// BenchmarkParallel: one iteration is one turn of 8 calls of a 200 ms
// read-only tool, then the answer.
func BenchmarkParallel(b *testing.B) {
	for _, e := range engines {
		if e.parallel == nil {
			continue
		}
		b.Run(e.name, func(b *testing.B) {
			benchTurns(b, func() (turn, error) { return e.parallel(8, 200*time.Millisecond) })
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/turn")
		})
	}
}

// BenchmarkHTTP: one iteration is one 50-round turn through rein's Chat
// adapter against the mock Chat Completions server in this process, so
// cpu-µs/round holds the server too (fantasyhttp's BenchmarkTurn is the
// same for fantasy). The command runs client and server in separate
// processes for its tables.
func BenchmarkHTTP(b *testing.B) {
	srv := httptest.NewServer(&mockchat.Server{Rounds: perTurn})
	defer srv.Close()
	t, err := reinHTTP(srv.URL+"/v1", perTurn)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	c0 := mockchat.ProcessCPU()
	for b.Loop() {
		if err := t(ctx); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N * perTurn)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rounds/s")
	b.ReportMetric(float64((mockchat.ProcessCPU()-c0).Microseconds())/n, "cpu-µs/round")
}

// benchTurns runs b.N turns, each prepared with the timer stopped.
func benchTurns(b *testing.B, prepare func() (turn, error)) {
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		t, err := prepare()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := t(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
