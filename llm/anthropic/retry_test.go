package anthropic

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// sleeps records the waits of a retry policy instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return nil
}

func TestRetriesUnderWithRetry(t *testing.T) {
	ok := testkit.AnthropicRound{Round: testkit.Round{Text: "Olá!"}}
	cases := []struct {
		name      string
		rounds    []testkit.AnthropicRound
		sseOnly   bool
		requests  int
		waits     []time.Duration // exact waits; nil checks only the count
		wantErr   llm.ErrorKind
		wantShown bool
	}{
		{name: "429 waits as retry-after says", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Fault: testkit.Fault429, RetryAfter: "2"}}, ok},
			requests: 2, waits: []time.Duration{2 * time.Second}},
		{name: "529 overloaded is retried", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Fault: testkit.FaultOverloaded}}, {Round: testkit.Round{Fault: testkit.Fault500}}, ok},
			requests: 3},
		{name: "reset before output is retried", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Fault: testkit.FaultResetBeforeOutput}}, ok},
			requests: 2},
		{name: "stream without message_stop before output is retried", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Fault: testkit.FaultNoTerminal}}, ok},
			sseOnly: true, requests: 2},
		{name: "reset after visible output surfaces as shown", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Text: "Hello there, friend", Fault: testkit.FaultResetAfterOutput}}, ok},
			sseOnly: true, requests: 1, wantErr: llm.StreamInterrupted, wantShown: true},
		{name: "unauthorized is not retried", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Fault: testkit.FaultUnauthorized}}, ok},
			requests: 1, wantErr: llm.Unauthorized},
		{name: "prompt too long is not retried", rounds: []testkit.AnthropicRound{{Round: testkit.Round{Fault: testkit.FaultContextLength}}, ok},
			requests: 1, wantErr: llm.BadRequest},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			if tc.sseOnly && mode.noSSE {
				continue
			}
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				m, srv := newMock(t, mode.noSSE, Options{}, tc.rounds...)
				var sl sleeps
				rm := llm.WithRetry(m, llm.RetryPolicy{Sleep: sl.sleep})
				s, err := rm.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
				var events []llm.Event
				var resp *llm.Response
				if err == nil {
					events, resp, err = drain(t, s)
				}
				if got := len(srv.Requests()); got != tc.requests {
					t.Errorf("%d requests, want %d", got, tc.requests)
				}
				retries := 0
				for _, ev := range events {
					if ev.Kind == llm.EventRetry {
						retries++
					}
				}
				if tc.wantErr != "" {
					var e *llm.Error
					if !errors.Is(err, tc.wantErr) || !errors.As(err, &e) || e.Shown != tc.wantShown {
						t.Fatalf("error %v, want %s (shown %v)", err, tc.wantErr, tc.wantShown)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if textOf(resp) != "Olá!" {
					t.Errorf("answer %q", textOf(resp))
				}
				if retries != tc.requests-1 || len(sl.d) != tc.requests-1 {
					t.Errorf("%d retry events and %d waits, want %d", retries, len(sl.d), tc.requests-1)
				}
				if tc.waits != nil && !equalDurations(sl.d, tc.waits) {
					t.Errorf("waits %v, want %v", sl.d, tc.waits)
				}
			})
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
