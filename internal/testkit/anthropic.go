package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Faults only the Anthropic mock injects.
const (
	// FaultOverloaded answers 529 overloaded_error.
	FaultOverloaded Fault = 100 + iota
	// FaultUnauthorized answers 401 authentication_error.
	FaultUnauthorized
	// FaultStreamError sends an error event (overloaded_error) after the
	// first visible output of a streamed round, as the API does when it
	// gives up mid-stream.
	FaultStreamError
)

// AnthropicRound is one scripted Messages answer: a [Round] plus what only
// Anthropic returns. Round.Reasoning becomes a signed thinking block,
// Round.Finish overrides stop_reason, and a call's Args that are not JSON are
// streamed as written (a JSON body carries them as a string, since it must
// stay JSON).
type AnthropicRound struct {
	Round
	// Signature signs the thinking block; empty means a made-up one.
	Signature string
	// Redacted adds a redacted_thinking block with this data first.
	Redacted string
	// CacheReadTokens and CacheWriteTokens are reported in usage beside
	// Round.InputTokens, which excludes them as the API's input_tokens does.
	CacheReadTokens, CacheWriteTokens int64
	// RetryAfterMs is sent as retry-after-ms with a Fault429.
	RetryAfterMs string
}

// AnthropicServer is a scripted Anthropic Messages API over httptest,
// written from the public API reference. Rounds are served in order, one per
// request, as server-sent events or one JSON body as the request asks. Every
// request is decoded back to rein items and checked against the history
// invariants and the API's own rules for messages; a violation fails the
// test.
type AnthropicServer struct {
	*httptest.Server
	t testing.TB
	// ChunkSize splits text, thinking and arguments into deltas of at most
	// this many bytes (default 8).
	ChunkSize int

	mu       sync.Mutex
	rounds   []AnthropicRound
	next     int
	captured []Captured
	gate     chan struct{}
}

// NewAnthropicServer starts a mock Messages API. Point the adapter at
// BaseURL.
func NewAnthropicServer(t testing.TB, rounds ...AnthropicRound) *AnthropicServer {
	m := &AnthropicServer{t: t, rounds: rounds, ChunkSize: 8}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// BaseURL is the API root without /v1, as the SDK takes it.
func (m *AnthropicServer) BaseURL() string { return m.URL }

// Push appends rounds to the script.
func (m *AnthropicServer) Push(rounds ...AnthropicRound) {
	m.mu.Lock()
	m.rounds = append(m.rounds, rounds...)
	m.mu.Unlock()
}

// Gate switches the server to gated mode: every streamed event, from
// message_start on, waits for a Release. It is for timing tests.
func (m *AnthropicServer) Gate() {
	m.mu.Lock()
	m.gate = make(chan struct{})
	m.mu.Unlock()
}

// Release lets one gated event go. It blocks until a response is waiting to
// send one.
func (m *AnthropicServer) Release() {
	m.mu.Lock()
	g := m.gate
	m.mu.Unlock()
	g <- struct{}{}
}

// Ungate lets every remaining event go, now and in later responses. Release
// must not be called after it.
func (m *AnthropicServer) Ungate() {
	m.mu.Lock()
	close(m.gate)
	m.mu.Unlock()
}

// Requests returns the captured requests so far.
func (m *AnthropicServer) Requests() []Captured {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Captured(nil), m.captured...)
}

func (m *AnthropicServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := Captured{Path: r.URL.Path, Body: body}
	var model string
	c.Items, c.Stream, model, c.Invariant = DecodeAnthropicRequest(body)
	m.mu.Lock()
	m.captured = append(m.captured, c)
	n := len(m.captured)
	var round AnthropicRound
	ok := m.next < len(m.rounds)
	if ok {
		round = m.rounds[m.next]
		m.next++
	}
	gate := m.gate
	m.mu.Unlock()
	if c.Invariant != nil {
		m.t.Errorf("anthropic mock: request %d breaks the history invariants: %v", n, c.Invariant)
	}
	if r.URL.Path != "/v1/messages" {
		m.t.Errorf("anthropic mock: request %d went to %s, want /v1/messages", n, r.URL.Path)
	}
	if !ok {
		m.t.Errorf("anthropic mock: request %d has no scripted round", n)
		anthropicError(w, http.StatusInternalServerError, "api_error", "no scripted round")
		return
	}
	if m.fail(w, round) {
		return
	}
	if model == "" {
		model = "claude-mock"
	}
	if m.endless(w, r, round, model, c.Stream) {
		return
	}
	msgID := fmt.Sprintf("msg_mock_%d", n)
	if !c.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(anthropicMessage(round, msgID, model, n))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// Headers go out at once, as the API sends them, so a gated stream
	// opens before its first event is released.
	http.NewResponseController(w).Flush()
	out := &anthropicSSE{w: w, done: r.Context().Done(), gate: gate, reset: round.Fault == FaultResetAfterOutput}
	m.stream(out, round, msgID, model, n)
}

// fail answers the faults that replace the whole response.
func (m *AnthropicServer) fail(w http.ResponseWriter, r AnthropicRound) bool {
	switch r.Fault {
	case Fault429:
		ra := r.RetryAfter
		if ra == "" {
			ra = "1"
		}
		w.Header().Set("retry-after", ra)
		if r.RetryAfterMs != "" {
			w.Header().Set("retry-after-ms", r.RetryAfterMs)
		}
		anthropicError(w, http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
	case Fault500:
		anthropicError(w, http.StatusInternalServerError, "api_error", "Internal server error")
	case Fault502:
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>502 Bad Gateway</html>")
	case Fault503:
		anthropicError(w, http.StatusServiceUnavailable, "api_error", "Service unavailable")
	case FaultOverloaded:
		anthropicError(w, 529, "overloaded_error", "Overloaded")
	case FaultUnauthorized:
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
	case FaultContextLength:
		// The API's real answer: a plain invalid_request_error whose only
		// mention of the cause is the message.
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
	case FaultResetBeforeOutput:
		hijackClose(w)
	default:
		return false
	}
	return true
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_mock")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

func anthropicStop(r AnthropicRound) string {
	switch {
	case r.Finish != "":
		return r.Finish
	case len(r.Calls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func anthropicUsage(r AnthropicRound, output bool) map[string]any {
	in, out := sumUsage(r.Round)
	if !output {
		out = 1
	}
	return map[string]any{
		"input_tokens":                in,
		"cache_creation_input_tokens": r.CacheWriteTokens,
		"cache_read_input_tokens":     r.CacheReadTokens,
		"output_tokens":               out,
	}
}

func anthropicSignature(r AnthropicRound, n int) string {
	if r.Signature != "" {
		return r.Signature
	}
	return fmt.Sprintf("c2lnbmF0dXJlLW1vY2stJWQ=%d", n)
}

func anthropicCallID(c MockCall, n, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("toolu_mock_%d_%d", n, i)
}

// anthropicMessage is a round as one non-streamed message.
func anthropicMessage(r AnthropicRound, id, model string, n int) map[string]any {
	content := []any{}
	if r.Redacted != "" {
		content = append(content, map[string]any{"type": "redacted_thinking", "data": r.Redacted})
	}
	if r.Reasoning != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": r.Reasoning, "signature": anthropicSignature(r, n)})
	}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.Calls {
		var input any = json.RawMessage(c.Args)
		if !json.Valid([]byte(c.Args)) {
			input = c.Args
		}
		content = append(content, map[string]any{"type": "tool_use", "id": anthropicCallID(c, n, i), "name": c.Name, "input": input})
	}
	return map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": anthropicStop(r), "stop_sequence": nil,
		"usage": anthropicUsage(r, true),
	}
}

// stream writes a round as the API's event sequence: message_start, for
// each block content_block_start, its deltas and content_block_stop, then
// message_delta and message_stop, with a ping after the first block starts.
func (m *AnthropicServer) stream(s *anthropicSSE, r AnthropicRound, id, model string, n int) {
	s.event("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(r, false),
	}})
	index := 0
	first := true
	start := func(block map[string]any) {
		s.event("content_block_start", map[string]any{"index": index, "content_block": block})
		if first {
			s.event("ping", map[string]any{})
			first = false
		}
	}
	delta := func(d map[string]any) {
		s.event("content_block_delta", map[string]any{"index": index, "delta": d})
	}
	stop := func() {
		s.event("content_block_stop", map[string]any{"index": index})
		index++
	}
	shown := false
	visible := func() {
		if shown {
			return
		}
		shown = true
		s.visible()
		switch r.Fault {
		case FaultMalformedLine:
			s.raw("event: content_block_delta\ndata: {\"type\": broken\n\n")
		case FaultStreamError:
			s.event("error", map[string]any{"error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
			s.broken = true
		}
	}
	if r.Redacted != "" {
		start(map[string]any{"type": "redacted_thinking", "data": r.Redacted})
		stop()
	}
	if r.Reasoning != "" {
		start(map[string]any{"type": "thinking", "thinking": "", "signature": ""})
		for _, p := range pieces(r.Reasoning, m.ChunkSize) {
			delta(map[string]any{"type": "thinking_delta", "thinking": p})
			visible()
		}
		delta(map[string]any{"type": "signature_delta", "signature": anthropicSignature(r, n)})
		stop()
	}
	if r.Text != "" {
		start(map[string]any{"type": "text", "text": ""})
		for _, p := range pieces(r.Text, m.ChunkSize) {
			delta(map[string]any{"type": "text_delta", "text": p})
			visible()
		}
		stop()
	}
	for i, c := range r.Calls {
		start(map[string]any{"type": "tool_use", "id": anthropicCallID(c, n, i), "name": c.Name, "input": map[string]any{}})
		visible()
		for _, p := range pieces(c.Args, m.ChunkSize) {
			delta(map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		stop()
	}
	s.event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": anthropicUsage(r, true)["output_tokens"]},
	})
	if r.Fault == FaultNoTerminal {
		return
	}
	s.event("message_stop", map[string]any{})
}

// anthropicSSE writes events, each waiting for the gate in gated mode, and
// breaks the connection after the first visible output when asked to. It
// stops writing once the client has gone.
type anthropicSSE struct {
	w      http.ResponseWriter
	done   <-chan struct{}
	gate   chan struct{}
	reset  bool
	broken bool
}

func (s *anthropicSSE) event(typ string, v map[string]any) {
	v["type"] = typ
	b, _ := json.Marshal(v)
	s.raw("event: " + typ + "\ndata: " + string(b) + "\n\n")
}

func (s *anthropicSSE) raw(text string) {
	if s.broken {
		return
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-s.done:
			s.broken = true
			return
		}
	}
	io.WriteString(s.w, text)
	http.NewResponseController(s.w).Flush()
}

// visible marks that visible output was written; a reset-after-output fault
// breaks the connection here.
func (s *anthropicSSE) visible() {
	if s.reset && !s.broken {
		s.broken = true
		hijackClose(s.w)
	}
}
