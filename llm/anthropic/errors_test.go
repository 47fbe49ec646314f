package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

func TestErrorsAreTypedFromStatusAndErrorType(t *testing.T) {
	cases := []struct {
		name       string
		round      testkit.AnthropicRound
		sseOnly    bool
		kind       llm.ErrorKind
		status     int
		code       string
		retryAfter time.Duration
		shown      bool
	}{
		{name: "429 rate_limit_error with retry-after", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.Fault429, RetryAfter: "7"}},
			kind: llm.RateLimited, status: 429, code: "rate_limit_error", retryAfter: 7 * time.Second},
		{name: "retry-after-ms wins over retry-after", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.Fault429, RetryAfter: "7"}, RetryAfterMs: "1500"},
			kind: llm.RateLimited, status: 429, code: "rate_limit_error", retryAfter: 1500 * time.Millisecond},
		{name: "500 api_error", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.Fault500}},
			kind: llm.ServerError, status: 500, code: "api_error"},
		{name: "502 html from a proxy", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.Fault502}},
			kind: llm.ServerError, status: 502},
		{name: "529 overloaded_error", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultOverloaded}},
			kind: llm.ServerError, status: 529, code: "overloaded_error"},
		{name: "401 authentication_error", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultUnauthorized}},
			kind: llm.Unauthorized, status: 401, code: "authentication_error"},
		// The API reports a prompt too long only in words; without a
		// structured signal it stays a bad request (see mapError).
		{name: "prompt too long stays a bad request", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultContextLength}},
			kind: llm.BadRequest, status: 400, code: "invalid_request_error"},
		{name: "connection reset before output", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultResetBeforeOutput}},
			kind: llm.StreamInterrupted},
		{name: "connection reset after output", round: testkit.AnthropicRound{Round: testkit.Round{Text: "Hello there, friend", Fault: testkit.FaultResetAfterOutput}},
			sseOnly: true, kind: llm.StreamInterrupted, shown: true},
		{name: "stream without message_stop", round: testkit.AnthropicRound{Round: testkit.Round{Text: "Hello", Fault: testkit.FaultNoTerminal}},
			sseOnly: true, kind: llm.StreamInterrupted, shown: true},
		{name: "malformed event", round: testkit.AnthropicRound{Round: testkit.Round{Text: "Hello there", Fault: testkit.FaultMalformedLine}},
			sseOnly: true, kind: llm.StreamInterrupted, shown: true},
		{name: "error event mid-stream", round: testkit.AnthropicRound{Round: testkit.Round{Text: "Hello there", Fault: testkit.FaultStreamError}},
			sseOnly: true, kind: llm.ServerError, code: "overloaded_error", shown: true},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			if tc.sseOnly && mode.noSSE {
				continue
			}
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				m, _ := newMock(t, mode.noSSE, Options{}, tc.round)
				_, _, err := run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T), want *llm.Error", err, err)
				}
				if !errors.Is(err, tc.kind) || e.Status != tc.status || e.Code != tc.code || e.Provider != "anthropic" {
					t.Errorf("got kind %s status %d code %q provider %q, want %s %d %q anthropic", e.Kind, e.Status, e.Code, e.Provider, tc.kind, tc.status, tc.code)
				}
				if e.RetryAfter != tc.retryAfter {
					t.Errorf("retry after %v, want %v", e.RetryAfter, tc.retryAfter)
				}
				if e.Shown != tc.shown {
					t.Errorf("shown %v, want %v", e.Shown, tc.shown)
				}
			})
		}
	}
}

func TestRequestTooLargeIsContextWindowExceeded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`)
	}))
	defer srv.Close()
	m, err := New(Options{BaseURL: srv.URL, APIKey: "k", Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
	if !errors.Is(err, llm.ContextWindowExceeded) {
		t.Fatalf("error %v, want ContextWindowExceeded", err)
	}
}

func TestCanceledContextIsNotTyped(t *testing.T) {
	m, srv := newMock(t, false, Options{}, testkit.AnthropicRound{Round: testkit.Round{Text: "slow answer"}})
	srv.Gate()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := m.Stream(ctx, &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel()
	_, err = s.Recv()
	var e *llm.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &e) {
		t.Fatalf("error %v, want context.Canceled and no typed error", err)
	}
}

func TestRetryAfterHeaders(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {now.Add(10 * time.Second).Format(http.TimeFormat)}}, 10 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"milliseconds win", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfter(tc.h, now); got != tc.want {
				t.Errorf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
