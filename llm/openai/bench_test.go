package openai_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// BenchmarkChunkLatency measures the latency the adapter adds between a
// chunk reaching the socket and its text event (DESIGN §11: p99 ≤ 1 ms).
// The gated mock server writes and flushes one chunk per Release; the clock
// runs from the Release to the event, so the figure also holds the server's
// write and the loopback hop. One iteration is one chunk.
func BenchmarkChunkLatency(b *testing.B) {
	for _, p := range []struct {
		name  string
		srv   func(testing.TB, ...testkit.Round) *testkit.MockServer
		model func(openai.Options) llm.Model
		// lead is how many chunks precede the first text delta.
		lead int
	}{
		{"chat", testkit.NewChatServer, func(o openai.Options) llm.Model { return openai.NewChat(o) }, 1},
		{"responses", testkit.NewResponsesServer, func(o openai.Options) llm.Model { return openai.NewResponses(o) }, 2},
	} {
		b.Run(p.name, func(b *testing.B) {
			text := strings.Repeat("abcdefgh", b.N)
			srv := p.srv(b, testkit.Round{Text: text})
			srv.Gate()
			m := p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m"})
			s, err := m.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("go")}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			lat := make([]time.Duration, 0, b.N)
			for range p.lead {
				srv.Release()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				srv.Release()
				for {
					ev, err := s.Recv()
					if err != nil {
						b.Fatal(err)
					}
					if ev.Kind == llm.EventText {
						break
					}
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			// Let the rest of the stream go and read it, so the handler ends.
			srv.Ungate()
			for {
				if _, err := s.Recv(); err != nil {
					break
				}
			}
			reportQuantiles(b, lat)
		})
	}
}

func reportQuantiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(1), "max-µs")
}

// turnRounds is the 50-round turn: 49 rounds of one call, then the answer.
const turnRounds = loop.MaxMaxRounds

func turnScript() []testkit.Round {
	rounds := make([]testkit.Round, 0, turnRounds)
	for range turnRounds - 1 {
		rounds = append(rounds, testkit.Round{Calls: []testkit.MockCall{{Name: "noop", Args: `{"n":1}`}}})
	}
	return append(rounds, testkit.Round{Text: "All done."})
}

var noopBench = tool.New("noop", "Do nothing.", func(context.Context, struct {
	N int `json:"n"`
}) (tool.Output, error) {
	return tool.Text("ok"), nil
}, tool.WithAccess(tool.ReadOnly))

// cpuTime is the user and system CPU time of the whole process: engine,
// adapter, HTTP client, and the in-process mock server.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mockModes are the two modes of the mock server the turn benchmarks run
// against: "full" decodes every request and checks the whole history's
// invariants, "lean" (testkit's Lean) sends pre-encoded chunks and decodes
// and checks only the items new since the conversation's previous request.
var mockModes = []struct {
	name string
	lean bool
}{{"mock=full", false}, {"mock=lean", true}}

func turnServer(b *testing.B, lean bool, rounds ...testkit.Round) *testkit.MockServer {
	srv := testkit.NewChatServer(b)
	if lean {
		srv.Lean()
	}
	srv.Push(rounds...)
	return srv
}

// BenchmarkTurnOverHTTP runs 50-round turns through the engine and the Chat
// adapter against the mock Chat server streaming SSE over loopback HTTP
// (DESIGN §11: ≥ 4,000 rounds/s on 2 cores). One iteration is one turn.
func BenchmarkTurnOverHTTP(b *testing.B) {
	for _, mode := range mockModes {
		b.Run(mode.name, func(b *testing.B) {
			srv := turnServer(b, mode.lean)
			m := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m"})
			e, err := loop.New(loop.Options{Model: m, MaxRounds: turnRounds, Tools: tool.NewSet(noopBench), LoopThreshold: -1})
			if err != nil {
				b.Fatal(err)
			}
			script := turnScript()
			b.ReportAllocs()
			cpu0, t0 := cpuTime(), time.Now()
			var rounds int
			for b.Loop() {
				srv.Push(script...)
				out, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("go")}})
				if err != nil || out.Rounds != turnRounds || out.StopReason != loop.StopFinished {
					b.Fatalf("turn: %v, %d rounds, %s", err, out.Rounds, out.StopReason)
				}
				rounds += out.Rounds
				srv.ForgetRequests()
			}
			reportRounds(b, rounds, time.Since(t0), cpuTime()-cpu0)
		})
	}
}

// BenchmarkTurnOverHTTPFloor sends the very request bodies of a 50-round
// turn with a bare net/http client to the same mock server and reads each
// stream to its end: the cost of the server and of HTTP alone, the floor
// under BenchmarkTurnOverHTTP.
func BenchmarkTurnOverHTTPFloor(b *testing.B) {
	for _, mode := range mockModes {
		b.Run(mode.name, func(b *testing.B) {
			srv := turnServer(b, mode.lean, turnScript()...)
			m := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m"})
			e, _ := loop.New(loop.Options{Model: m, MaxRounds: turnRounds, Tools: tool.NewSet(noopBench), LoopThreshold: -1})
			if _, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("go")}}); err != nil {
				b.Fatal(err)
			}
			var bodies [][]byte
			for _, c := range srv.Requests() {
				bodies = append(bodies, c.Body)
			}
			srv.ForgetRequests()
			url := srv.BaseURL() + "/chat/completions"
			client := &http.Client{}
			script := turnScript()
			b.ReportAllocs()
			cpu0, t0 := cpuTime(), time.Now()
			var rounds int
			for b.Loop() {
				srv.Push(script...)
				for _, body := range bodies {
					req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer k")
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || n == 0 {
						b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
					}
					rounds++
				}
				srv.ForgetRequests()
			}
			reportRounds(b, rounds, time.Since(t0), cpuTime()-cpu0)
		})
	}
}

func reportRounds(b *testing.B, rounds int, wall, cpu time.Duration) {
	if rounds == 0 {
		return
	}
	b.ReportMetric(float64(rounds)/wall.Seconds(), "rounds/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(rounds), "cpu-µs/round")
	b.ReportMetric(float64(wall.Microseconds())/float64(rounds), "µs/round")
}
