package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/reinhq/rein/llm"
)

// Fault is a failure a mock provider server injects into a round (DESIGN
// §12).
type Fault int

// Faults.
const (
	NoFault Fault = iota
	// Fault429 answers 429 with Retry-After (Round.RetryAfter, default "1").
	Fault429
	Fault500
	Fault502
	Fault503
	// FaultResetBeforeOutput closes the connection before any response.
	FaultResetBeforeOutput
	// FaultResetAfterOutput sends the first content chunk, then closes the
	// connection.
	FaultResetAfterOutput
	// FaultNoTerminal ends the stream cleanly but without its terminal event
	// (for Chat: without the finish chunk and [DONE]).
	FaultNoTerminal
	// FaultMalformedLine sends a data line that is not JSON mid-stream.
	FaultMalformedLine
	// FaultContextLength answers 400 with code context_length_exceeded.
	FaultContextLength
	// FaultToolsUnsupported answers 400 with code tools_unsupported: the
	// server refuses tool definitions.
	FaultToolsUnsupported
	// FaultToolsRefusedInProse answers 400 as Ollama does for a model
	// without tool support: the reason in the message only, no code.
	FaultToolsRefusedInProse
)

// MockCall is a call a scripted round makes. Args are sent as written, so a
// test can send invalid JSON.
type MockCall struct {
	ID, Name, Args string
	// NoID sends the call without an id, as some compatible servers do.
	NoID bool
}

// Round is one scripted model answer. A round with only Reasoning is a
// reasoning-only round.
type Round struct {
	Reasoning string
	Text      string
	Calls     []MockCall
	// Finish overrides the raw finish reason (Chat) or incomplete reason
	// (Responses), such as "length" or "max_output_tokens".
	Finish       string
	InputTokens  int64
	OutputTokens int64
	Fault        Fault
	RetryAfter   string
}

// Captured is one request a mock server received.
type Captured struct {
	Path string
	Body []byte
	// Items is the history decoded back from the wire.
	Items []llm.Item
	// Stream reports whether the request asked for server-sent events.
	Stream bool
	// Invariant is the result of llm.CheckHistory on Items.
	Invariant error
}

// MockServer is a scripted provider server speaking Chat Completions or the
// Responses API over httptest. Rounds are served in order, one per request.
type MockServer struct {
	*httptest.Server
	t         testing.TB
	responses bool
	// ChunkSize splits text, reasoning and arguments into pieces of at most
	// this many bytes (default 8).
	ChunkSize int

	mu       sync.Mutex
	rounds   []Round
	next     int
	captured []Captured
	gate     chan struct{}

	// Lean mode (see Lean): pre-encoded streams by round, and the
	// conversations followed.
	lean    bool
	encoded [][][]byte
	convs   []*leanConv
}

// NewChatServer starts a mock Chat Completions server at URL+"/v1".
func NewChatServer(t testing.TB, rounds ...Round) *MockServer {
	return newMock(t, false, rounds)
}

// NewResponsesServer starts a mock Responses API server at URL+"/v1".
func NewResponsesServer(t testing.TB, rounds ...Round) *MockServer {
	return newMock(t, true, rounds)
}

func newMock(t testing.TB, responses bool, rounds []Round) *MockServer {
	m := &MockServer{t: t, responses: responses, rounds: rounds, ChunkSize: 8}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// BaseURL is the API root as the SDK takes it.
func (m *MockServer) BaseURL() string { return m.URL + "/v1" }

// Gate switches the server to gated mode: every streamed chunk after the
// headers waits for a Release. It is for timing tests.
func (m *MockServer) Gate() {
	m.mu.Lock()
	m.gate = make(chan struct{})
	m.mu.Unlock()
}

// Ungate ends gated mode: the chunks waiting and all later ones go at once.
// Call it instead of further Releases when a timing test is done, so that
// the handler can finish.
func (m *MockServer) Ungate() {
	m.mu.Lock()
	if m.gate != nil {
		close(m.gate)
		m.gate = nil
	}
	m.mu.Unlock()
}

// Release lets one gated chunk go.
func (m *MockServer) Release() { m.gate <- struct{}{} }

// Requests returns the captured requests so far.
func (m *MockServer) Requests() []Captured {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Captured(nil), m.captured...)
}

// ForgetRequests drops the requests captured so far, so that a long
// benchmark does not hold every body it sent. Invariants are still checked
// on each request as it arrives.
func (m *MockServer) ForgetRequests() {
	m.mu.Lock()
	clear(m.captured)
	m.captured = m.captured[:0]
	m.mu.Unlock()
}

// Push appends rounds to the script.
func (m *MockServer) Push(rounds ...Round) {
	m.mu.Lock()
	m.rounds = append(m.rounds, rounds...)
	if m.lean {
		for i := len(m.rounds) - len(rounds); i < len(m.rounds); i++ {
			m.encodeRound(i)
		}
	}
	m.mu.Unlock()
}

func (m *MockServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := Captured{Path: r.URL.Path, Body: body}
	m.mu.Lock()
	lean := m.lean
	m.mu.Unlock()
	var err error
	switch {
	case lean:
		c.Items, c.Stream, err = m.leanDecode(body)
	case m.responses:
		c.Items, c.Stream, err = decodeResponsesRequest(body)
	default:
		c.Items, c.Stream, err = decodeChatRequest(body)
	}
	if err == nil && !lean {
		c.Invariant = llm.CheckHistory(c.Items)
	} else {
		c.Invariant = err
	}
	if c.Invariant != nil {
		m.t.Errorf("mock server: request %d breaks the history invariants: %v", len(m.captured)+1, c.Invariant)
	}
	m.mu.Lock()
	m.captured = append(m.captured, c)
	var round Round
	var encoded [][]byte
	ok := m.next < len(m.rounds)
	if ok {
		round = m.rounds[m.next]
		if m.next < len(m.encoded) {
			encoded = m.encoded[m.next]
			m.encoded[m.next] = nil
		}
		m.next++
	}
	gate := m.gate
	m.mu.Unlock()
	if !ok {
		m.t.Errorf("mock server: request %d has no scripted round", len(m.captured))
		http.Error(w, `{"error":{"message":"no scripted round","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	if m.fail(w, round) || m.endless(w, r, round, c.Stream) {
		return
	}
	if encoded != nil && gate == nil && c.Stream {
		writeLean(w, encoded)
		return
	}
	out := &sseWriter{w: w, gate: gate, reset: round.Fault == FaultResetAfterOutput}
	if !c.Stream {
		w.Header().Set("Content-Type", "application/json")
		var v any
		if m.responses {
			v = responsesBody(round, m.next)
		} else {
			v = chatBody(round, m.next)
		}
		json.NewEncoder(w).Encode(v)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// The headers go at once, as a real server's do: in gated mode the
	// client has its response before the first chunk is released.
	http.NewResponseController(w).Flush()
	if m.responses {
		m.streamResponses(out, round)
	} else {
		m.streamChat(out, round)
	}
}

// fail answers the faults that replace the whole response.
func (m *MockServer) fail(w http.ResponseWriter, round Round) bool {
	switch round.Fault {
	case Fault429:
		ra := round.RetryAfter
		if ra == "" {
			ra = "1"
		}
		w.Header().Set("Retry-After", ra)
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "requests", "Rate limit reached")
	case Fault500:
		writeError(w, 500, "server_error", "server_error", "The server had an error")
	case Fault502:
		w.WriteHeader(502)
		io.WriteString(w, "<html>502 Bad Gateway</html>")
	case Fault503:
		writeError(w, 503, "", "server_is_overloaded", "The engine is currently overloaded")
	case FaultContextLength:
		writeError(w, 400, "context_length_exceeded", "invalid_request_error", "This model's maximum context length is 128000 tokens.")
	case FaultToolsUnsupported:
		writeError(w, 400, "tools_unsupported", "invalid_request_error", "this model does not support tools")
	case FaultToolsRefusedInProse:
		writeError(w, 400, "", "api_error", "registry.ollama.ai/library/gemma3:4b does not support tools")
	case FaultResetBeforeOutput:
		hijackClose(w)
	default:
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, status int, code, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

func hijackClose(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// sseWriter writes events, waiting for the gate in gated mode, and breaks
// the connection after the first visible output when asked to.
type sseWriter struct {
	w      http.ResponseWriter
	gate   chan struct{}
	reset  bool
	broken bool
}

func (s *sseWriter) data(v any) {
	b, _ := json.Marshal(v)
	s.raw("data: " + string(b) + "\n\n")
}

func (s *sseWriter) event(typ string, v map[string]any) {
	v["type"] = typ
	b, _ := json.Marshal(v)
	s.raw("event: " + typ + "\ndata: " + string(b) + "\n\n")
}

func (s *sseWriter) raw(text string) {
	if s.broken {
		return
	}
	if s.gate != nil {
		<-s.gate
	}
	io.WriteString(s.w, text)
	http.NewResponseController(s.w).Flush()
}

// visible marks that visible output was written; a reset-after-output fault
// breaks the connection here.
func (s *sseWriter) visible() {
	if s.reset && !s.broken {
		s.broken = true
		hijackClose(s.w)
	}
}

func pieces(s string, n int) []string {
	if n <= 0 {
		n = 8
	}
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8Start(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func callID(c MockCall, round, i int) string {
	if c.NoID {
		return ""
	}
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_r%d_%d", round, i)
}

func sumUsage(r Round) (int64, int64) {
	in, out := r.InputTokens, r.OutputTokens
	if in == 0 {
		in = 10
	}
	if out == 0 {
		out = int64(len(r.Text)+len(r.Reasoning))/4 + 1
	}
	return in, out
}

// WireHistory decodes a Chat Completions (responses false) or Responses API
// request body back into history items, so that tests replaying recorded
// traffic can check the invariants of DESIGN §2.5 on what went over the
// wire, as the mock servers do on what they receive.
func WireHistory(responses bool, body []byte) ([]llm.Item, error) {
	var items []llm.Item
	var err error
	if responses {
		items, _, err = decodeResponsesRequest(body)
	} else {
		items, _, err = decodeChatRequest(body)
	}
	return items, err
}
