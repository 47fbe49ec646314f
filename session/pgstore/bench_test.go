package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

// BenchmarkRecord64Turns measures durable items per second into PostgreSQL
// from 64 turns recording at once, each on its own thread under its own
// lease (every item committed, fenced, before Record returns).
//
// synchronous_commit=off (a URL parameter: a session setting of
// PostgreSQL's) is measured for comparison only: Record then returns
// before the commit is flushed, so an item acknowledged in the last
// moments before PostgreSQL itself crashes (not a node) is lost.
func BenchmarkRecord64Turns(b *testing.B) {
	b.ReportAllocs()
	for _, sync := range []string{"on", "off"} {
		b.Run("synchronous_commit="+sync, func(b *testing.B) {
			url := servicetest.Postgres(b)
			if sync == "off" {
				url += "&synchronous_commit=off"
			}
			record64(b, url)
		})
	}
}

// BenchmarkRecordOneTurn measures a durable item's latency when one turn
// records alone: what a turn waits per item on a quiet node.
func BenchmarkRecordOneTurn(b *testing.B) {
	b.ReportAllocs()
	recordN(b, servicetest.Postgres(b), 1)
}

func record64(b *testing.B, url string) { recordN(b, url, 64) }

func recordN(b *testing.B, url string, turns int) {
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url, Lease: time.Minute, MaxRunning: turns})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range turns {
		th := fmt.Sprintf("th%d", i)
		if err := s.SaveThread(ctx, session.Thread{ID: th}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ClaimTurn(ctx, session.Turn{ID: th + ".turn", ThreadID: th, Status: session.TurnInProgress}); err != nil {
			b.Fatal(err)
		}
	}
	text := llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "a streamed round's text, about as long as a short answer is"}}}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + turns - 1) / turns
	for i := range turns {
		wg.Go(func() {
			th := fmt.Sprintf("th%d", i)
			for k := range per {
				it := text
				it.ID, it.TurnID = fmt.Sprintf("%s.turn.%d", th, k+1), th+".turn"
				if err := s.Record(ctx, th, it); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(per*turns)/time.Since(start).Seconds(), "items/s")
}

// BenchmarkFailover measures, with the default lease, the time from a
// node's death (its heartbeat stops at a random point of its cycle, its
// leases left behind) to another node, polling Acquire every 100ms, taking
// its turn: the store's part of a failover. It reports the median and the
// worst of b.N deaths, and of the time from the lease's expiry (as the
// database holds it at the death) to the turn taken: what the taker adds
// to the lease.
func BenchmarkFailover(b *testing.B) {
	b.ReportAllocs()
	url := servicetest.Postgres(b)
	ctx := context.Background()
	taker, err := pgstore.Open(ctx, pgstore.Config{URL: url, Node: "taker"})
	if err != nil {
		b.Fatal(err)
	}
	defer taker.Close()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close(ctx)
	var took, afterExpiry []time.Duration
	for i := range b.N {
		dying, err := pgstore.Open(ctx, pgstore.Config{URL: url, Node: fmt.Sprintf("dying%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		th := fmt.Sprintf("th%d", i)
		if err := dying.SaveThread(ctx, session.Thread{ID: th}); err != nil {
			b.Fatal(err)
		}
		if _, err := dying.ClaimTurn(ctx, session.Turn{ID: th + ".turn", ThreadID: th, Status: session.TurnInProgress}); err != nil {
			b.Fatal(err)
		}
		// Die somewhere in the heartbeat's cycle.
		time.Sleep(time.Duration(i%10) * pgstore.DefaultLease / 30)
		dying.Close()
		died := time.Now()
		var left float64
		if err := db.QueryRow(ctx, `SELECT extract(epoch FROM lease_until - now()) FROM turns WHERE id = $1`, th+".turn").Scan(&left); err != nil {
			b.Fatal(err)
		}
		expiry := died.Add(time.Duration(left * float64(time.Second)))
		for {
			taken, err := taker.Acquire(ctx, 1, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(taken) == 1 {
				took = append(took, time.Since(died))
				afterExpiry = append(afterExpiry, time.Since(expiry))
				if err := taker.SaveTurn(ctx, session.Turn{ID: th + ".turn", ThreadID: th, Status: session.TurnCompleted, Ended: time.Now()}); err != nil {
					b.Fatal(err)
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	slices.Sort(took)
	slices.Sort(afterExpiry)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "max-ms")
	b.ReportMetric(float64(afterExpiry[len(afterExpiry)/2].Milliseconds()), "after-expiry-p50-ms")
	b.ReportMetric(float64(afterExpiry[len(afterExpiry)-1].Milliseconds()), "after-expiry-max-ms")
}
