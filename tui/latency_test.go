package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
)

// screen is the chat's terminal output as the benchmarks watch it: each
// write is kept, and a waiter is woken when what it waits for arrives.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// waiting is the text a waiter looks for after offset from, and got
	// is signalled, with the time, when it arrives.
	waiting string
	from    int
	got     chan time.Time
}

func (s *screen) Write(p []byte) (int, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if s.waiting != "" && bytes.Contains(s.buf.Bytes()[s.from:], []byte(s.waiting)) {
		s.waiting = ""
		s.got <- now
	}
	return len(p), nil
}

// expect arms a wait for text in what is written from now on.
func (s *screen) expect(text string) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting, s.from, s.got = text, s.buf.Len(), make(chan time.Time, 1)
	return s.got
}

// latencyChat runs the real chat (Run: the Bubble Tea program, its
// renderer) over a Session backend whose model is the OpenAI Chat adapter
// talking to the gated mock provider server.
type latencyChat struct {
	mock   *testkit.MockServer
	in     *io.PipeWriter
	screen *screen
	done   chan error
	cancel context.CancelFunc
	sched  *session.Scheduler
}

// idle waits until no turn runs on the chat's thread.
func (c *latencyChat) idle(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ts, _, err := c.sched.ListThreads(ctx, 1, "")
		if err != nil {
			b.Fatal(err)
		}
		if len(ts) == 1 {
			if _, running, err := c.sched.Active(ctx, ts[0].ID); err == nil && !running {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("the turn never ended")
		}
		time.Sleep(time.Millisecond)
	}
}

func startLatencyChat(b *testing.B, rounds ...testkit.Round) *latencyChat {
	b.Helper()
	mock := testkit.NewChatServer(b, rounds...)
	model := openai.NewChat(openai.Options{APIKey: "test", BaseURL: mock.BaseURL(), Model: "mock"})
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "rein.db"))
	if err != nil {
		b.Fatal(err)
	}
	setup := func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: model}, nil, nil
	}
	sched, err := session.New(session.Config{Store: session.NewSQLStore(st), Setup: setup})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	c := &latencyChat{mock: mock, in: inW, screen: &screen{}, done: make(chan error, 1), cancel: cancel, sched: sched}
	go func() {
		c.done <- run(ctx, NewSession(sched, SessionOptions{}), Options{Model: "mock"}, inR, c.screen, tea.WithWindowSize(100, 30))
	}()
	b.Cleanup(func() {
		cancel()
		inW.Close()
		<-c.done
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		// Closing the scheduler cancels the turn's request; the server's
		// handler, ungated after, then ends at its next write.
		sched.Close(cctx)
		mock.Ungate()
		st.Close()
	})
	c.wait(b, "rein chat · mock")
	return c
}

// wait waits until the screen shows text (written from the start).
func (c *latencyChat) wait(b *testing.B, text string) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.screen.mu.Lock()
		ok := bytes.Contains(c.screen.buf.Bytes(), []byte(text))
		c.screen.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.screen.mu.Lock()
			out := c.screen.buf.String()
			c.screen.mu.Unlock()
			b.Fatalf("timed out waiting for %q on the screen:\n%q", text, out[max(0, len(out)-3000):])
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *latencyChat) send(b *testing.B, s string) {
	b.Helper()
	if _, err := io.WriteString(c.in, s); err != nil {
		b.Fatal(err)
	}
}

// percentile returns the p-th percentile of ds (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkEnterToFirstByte measures, per turn, the time from the
// provider's first byte of a streamed answer to that text on the screen,
// and from Enter to the provider receiving the request. Run it with a
// count of turns: go test -run '^$' -bench EnterToFirstByte -benchtime 30x ./tui
func BenchmarkEnterToFirstByte(b *testing.B) {
	rounds := make([]testkit.Round, b.N)
	for i := range rounds {
		rounds[i] = testkit.Round{Text: fmt.Sprintf("ANSWER%03d streams here", i)}
	}
	c := startLatencyChat(b, rounds...)
	var toScreen, toRequest []time.Duration
	b.ResetTimer()
	for i := range b.N {
		c.mock.Gate()
		marker := fmt.Sprintf("ANSWER%03d", i)
		before := len(c.mock.Requests())
		c.send(b, fmt.Sprintf("question %d", i))
		enter := time.Now()
		c.send(b, "\r")
		for len(c.mock.Requests()) == before {
			time.Sleep(100 * time.Microsecond)
		}
		asked := time.Now()
		got := c.screen.expect(marker[:6])
		// The first chunk (the role) and the first text chunk go; the
		// second is the answer's first byte.
		c.mock.Release()
		first := time.Now()
		c.mock.Release()
		c.mock.Ungate()
		var shown time.Time
		select {
		case shown = <-got:
		case <-time.After(30 * time.Second):
			b.Fatalf("turn %d: the answer never reached the screen", i)
		}
		toScreen = append(toScreen, shown.Sub(first))
		toRequest = append(toRequest, asked.Sub(enter))
		c.idle(b)
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(toScreen, 0.5)), "ms-firstbyte-to-screen-p50")
	b.ReportMetric(ms(percentile(toScreen, 0.99)), "ms-firstbyte-to-screen-p99")
	b.ReportMetric(ms(percentile(toRequest, 0.5)), "ms-enter-to-request-p50")
	b.ReportMetric(ms(percentile(toRequest, 0.99)), "ms-enter-to-request-p99")
}

// BenchmarkKeystrokeWhileStreaming measures the time from a key press to
// its character on the screen while a long answer streams (a chunk every
// millisecond): go test -run '^$' -bench KeystrokeWhileStreaming
// -benchtime 200x ./tui
func BenchmarkKeystrokeWhileStreaming(b *testing.B) {
	// A chunk of 4 bytes every 2 ms: 2,000 characters a second, faster
	// than providers stream (about 100 tokens a second), for longer than
	// the benchmark types.
	long := strings.Repeat("streaming words go by ", 40000)
	c := startLatencyChat(b, testkit.Round{Text: long})
	c.mock.ChunkSize = 4
	c.mock.Gate()
	stop := make(chan struct{})
	released := make(chan struct{})
	go func() {
		defer close(released)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// The stream outlasts the benchmark, so the server
				// always takes the release.
				c.mock.Release()
			}
		}
	}()
	c.send(b, "write a lot\r")
	c.wait(b, "streaming words")
	keys := "!#$%&*+=^"
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		k := string(keys[i%len(keys)])
		got := c.screen.expect(k)
		at := time.Now()
		c.send(b, k)
		select {
		case shown := <-got:
			lat = append(lat, shown.Sub(at))
		case <-time.After(30 * time.Second):
			b.Fatalf("key %d never reached the screen", i)
		}
		// Backspace, so the input line stays short.
		c.send(b, "\x7f")
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	ts, _, _ := c.sched.ListThreads(context.Background(), 1, "")
	if _, running, _ := c.sched.Active(context.Background(), ts[0].ID); !running {
		b.Fatal("the answer finished streaming before the last key")
	}
	close(stop)
	<-released
	b.ReportMetric(ms(percentile(lat, 0.5)), "ms-key-to-screen-p50")
	b.ReportMetric(ms(percentile(lat, 0.99)), "ms-key-to-screen-p99")
}
