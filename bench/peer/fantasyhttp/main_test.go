package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/reinhq/rein/bench/peer/mockchat"
)

func TestTurn(t *testing.T) {
	srv := httptest.NewServer(&mockchat.Server{Rounds: 50})
	defer srv.Close()
	turn, err := newTurn(srv.URL+"/v1", 50)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the mock keeps no state: the same turn again
		if err := turn(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkTurn runs 50-round turns against the mock in this process, so
// cpu-µs/round holds the server too; the bench/peer command runs client
// and server in separate processes for its tables.
func BenchmarkTurn(b *testing.B) {
	srv := httptest.NewServer(&mockchat.Server{Rounds: 50})
	defer srv.Close()
	turn, err := newTurn(srv.URL+"/v1", 50)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	c0 := mockchat.ProcessCPU()
	for b.Loop() {
		if err := turn(ctx); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N * 50)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rounds/s")
	b.ReportMetric(float64((mockchat.ProcessCPU()-c0).Microseconds())/n, "cpu-µs/round")
}
