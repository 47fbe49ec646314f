package anthropic

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/window"
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
			requests: 1, wantErr: llm.ContextWindowExceeded},
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

// TestContextOverflowCompactsAndRetriesTheRound runs the whole path of an
// Anthropic context overflow: the API refuses a round with its "prompt is too
// long" 400, the adapter types it ContextWindowExceeded, llm.WithRetry leaves
// it alone (not transient), and the engine with a context window compacts the
// history once through the model and sends the round again, which answers.
func TestContextOverflowCompactsAndRetriesTheRound(t *testing.T) {
	const (
		summary = "Goal: the weather in Florence. Progress: looked it up, 31 °C and sunny. Remaining: answer."
		answer  = "It is 31 °C and sunny in Florence."
	)
	rounds := []testkit.AnthropicRound{
		{Round: testkit.Round{Text: "Let me check.", Calls: []testkit.MockCall{{Name: "weather", Args: `{"location":"Florence"}`}}}},
		{Round: testkit.Round{Fault: testkit.FaultContextLength}},
		{Round: testkit.Round{Text: summary}}, // the handoff summary
		{Round: testkit.Round{Text: answer}},  // the round sent again
	}
	weather := tool.New("weather", "Current weather in a city.",
		func(_ context.Context, in struct {
			Location string `json:"location"`
		}) (tool.Output, error) {
			return tool.Text(in.Location + ": 31 °C, sunny"), nil
		}, tool.WithAccess(tool.ReadOnly))
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m, srv := newMock(t, mode.noSSE, Options{}, rounds...)
			w, err := window.New(window.Config{Model: "claude-sonnet-4-5", Window: 200_000, MaxOutput: 8_000})
			if err != nil {
				t.Fatal(err)
			}
			var sl sleeps
			var mu sync.Mutex
			var warnings []event.Event
			e, err := loop.New(loop.Options{
				Model:     llm.WithRetry(m, llm.RetryPolicy{Sleep: sl.sleep}),
				ModelName: "claude-sonnet-4-5",
				Tools:     tool.NewSet(weather),
				Window:    w,
				Events: event.HandlerFunc(func(ev event.Event) {
					if ev.Type == event.Warning {
						mu.Lock()
						warnings = append(warnings, ev)
						mu.Unlock()
					}
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := e.Run(ctx, loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("What is the weather in Florence?")}})
			if err != nil || out.Status != loop.StatusCompleted || out.StopReason != loop.StopFinished {
				t.Fatalf("outcome %v/%v, error %v; want completed/finished", out.Status, out.StopReason, err)
			}
			if out.Answer != answer {
				t.Errorf("answer %q, want %q", out.Answer, answer)
			}
			if out.Rounds != 2 {
				t.Errorf("%d rounds, want 2: the refused round is not counted, its retry is", out.Rounds)
			}
			if len(sl.d) != 0 {
				t.Errorf("llm.WithRetry waited %v: a context overflow is not a transient error", sl.d)
			}

			reqs := srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4: the call, the refused round, the summary, the round again", len(reqs))
			}
			last := func(c testkit.Captured) string { return c.Items[len(c.Items)-1].Text() }
			if got := last(reqs[2]); !strings.Contains(got, "Context checkpoint") {
				t.Errorf("request 3 ends with %q, want the request for a handoff summary", got)
			}
			// The round sent again: the summary with the user's message
			// quoted, then the kept round (the call and its result).
			again := reqs[3].Items
			if len(again) != 3 {
				t.Fatalf("the round sent again holds %d items, want the compaction and the kept call and result", len(again))
			}
			if first := again[0]; first.Role != llm.RoleUser || !strings.Contains(first.Text(), summary) || !strings.Contains(first.Text(), "What is the weather in Florence?") {
				t.Errorf("the round sent again starts with %s %q, want the handoff summary and the user's message", first.Role, first.Text())
			}
			if cs := again[1].Calls(); again[1].Role != llm.RoleAssistant || len(cs) != 1 || cs[0].Name != "weather" {
				t.Errorf("item 2 of the round sent again is %s with calls %+v, want the kept weather call", again[1].Role, cs)
			} else if res := again[2].Result(); res == nil || res.CallID != cs[0].ID {
				t.Errorf("item 3 of the round sent again is %+v, want the result of call %s", res, cs[0].ID)
			}
			compacting := 0
			for _, ev := range warnings {
				if ev.Code == event.WarnGuard && strings.Contains(ev.Content, "compacting the history") {
					compacting++
				}
			}
			if compacting != 1 {
				t.Errorf("%d compaction warnings in %+v, want 1", compacting, warnings)
			}
		})
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
