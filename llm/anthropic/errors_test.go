package anthropic

import (
	"context"
	"encoding/json"
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
		// The API reports a prompt too long as a 400 invalid_request_error
		// told only by the fixed opening of its message (see mapError).
		{name: "prompt too long is a context window error", round: testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultContextLength}},
			kind: llm.ContextWindowExceeded, status: 400, code: "invalid_request_error"},
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

// TestContextOverflowIsToldByTheMessageOpening pins the one place the kind
// depends on a message: a 400 invalid_request_error opening with one of the
// API's two fixed context-overflow messages. Anything short of that exact
// shape stays a bad request.
func TestContextOverflowIsToldByTheMessageOpening(t *testing.T) {
	const (
		promptTooLong = "prompt is too long: 208244 tokens > 200000 maximum"
		inputAndMax   = "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again"
	)
	cases := []struct {
		name   string
		status int
		typ    string
		msg    string
		kind   llm.ErrorKind
	}{
		{"prompt is too long is a context window error", 400, "invalid_request_error", promptTooLong, llm.ContextWindowExceeded},
		{"input length and max_tokens past the limit is a context window error", 400, "invalid_request_error", inputAndMax, llm.ContextWindowExceeded},
		{"another invalid request stays a bad request", 400, "invalid_request_error", "messages: text content blocks must be non-empty", llm.BadRequest},
		{"the prefix in the middle of a message stays a bad request", 400, "invalid_request_error", "messages.0.content.0.text: " + promptTooLong, llm.BadRequest},
		{"the sibling prefix in the middle of a message stays a bad request", 400, "invalid_request_error", "max_tokens: " + inputAndMax, llm.BadRequest},
		{"the prefix in another case stays a bad request", 400, "invalid_request_error", "Prompt is too long: 208244 tokens > 200000 maximum", llm.BadRequest},
		{"a 400 of another type stays a bad request", 400, "not_found_error", promptTooLong, llm.BadRequest},
		{"a 400 of an unknown type stays a bad request", 400, "some_new_error", promptTooLong, llm.BadRequest},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				body, err := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": tc.typ, "message": tc.msg}})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					w.Write(body)
				}))
				defer srv.Close()
				m, err := New(Options{BaseURL: srv.URL, APIKey: "k", Model: "claude-sonnet-4-5", DisableStreaming: mode.noSSE})
				if err != nil {
					t.Fatal(err)
				}
				_, _, err = run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T), want *llm.Error", err, err)
				}
				if e.Kind != tc.kind || e.Status != tc.status || e.Code != tc.typ || e.Message != tc.msg {
					t.Errorf("got kind %s status %d code %q message %q, want %s %d %q %q", e.Kind, e.Status, e.Code, e.Message, tc.kind, tc.status, tc.typ, tc.msg)
				}
				if llm.Transient(err) {
					t.Errorf("error %v is transient; a request refused for its content is not retried as it is", err)
				}
			})
		}
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
