package testkit

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/reinhq/rein/llm"
)

// Lean switches a Chat server to its benchmark mode (off by default), so
// that a benchmark measures HTTP and the client rather than the mock:
//
//   - the SSE chunks of each scripted round without a fault are encoded
//     when the round is scripted (Push, or Lean for the rounds already
//     there), without maps or reflection, and written as they are;
//   - a request whose messages begin with the very bytes of the messages of
//     an earlier request (the same conversation, one or more rounds on) is
//     decoded and checked only from there: the new messages are decoded and
//     the invariants of [llm.CheckHistory] checked on the new items, with
//     their call ids against those of the earlier items. As the earlier
//     history passed the check and left no call open, this is the check of
//     the whole history. Any other request is decoded and checked whole.
//
// Captured requests are complete (Items is the whole history). Set
// ChunkSize before calling Lean. Gated mode and faults work as without it.
func (m *MockServer) Lean() {
	if m.responses {
		m.t.Fatal("mock server: Lean is for the Chat server")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lean = true
	for i := m.next; i < len(m.rounds); i++ {
		m.encodeRound(i)
	}
}

// leanConv is the state of one conversation after its latest request.
type leanConv struct {
	body []byte
	// end is the index in body of the ']' that closes the messages.
	end   int
	items []llm.Item
	// calls are the call ids of items.
	calls map[string]bool
	// streamBefore holds the stream flag when it precedes the messages.
	streamBefore *bool
}

// maxLeanConvs bounds the conversations a lean server follows.
const maxLeanConvs = 16

// encodeRound pre-encodes the stream of round i (served as request i+1).
// m.mu is held.
func (m *MockServer) encodeRound(i int) {
	for len(m.encoded) <= i {
		m.encoded = append(m.encoded, nil)
	}
	if m.rounds[i].Fault != NoFault {
		return
	}
	m.encoded[i] = leanChatStream(m.rounds[i], i+1, m.ChunkSize)
}

// leanChatStream encodes a round as streamChat writes it, one element per
// event.
func leanChatStream(r Round, n, size int) [][]byte {
	var out [][]byte
	head := []byte(`data: {"id":"chatcmpl-mock-` + strconv.Itoa(n) + `","object":"chat.completion.chunk","model":"mock","choices":[{"index":0,"delta":`)
	chunk := func(delta func([]byte) []byte, finish string) {
		b := append([]byte(nil), head...)
		b = delta(b)
		b = append(b, `,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = appendQuoted(b, finish)
		}
		out = append(out, append(b, "}]}\n\n"...))
	}
	field := func(name, v string) func([]byte) []byte {
		return func(b []byte) []byte {
			b = append(b, `{"`+name+`":`...)
			return append(appendQuoted(b, v), '}')
		}
	}
	chunk(func(b []byte) []byte { return append(b, `{"role":"assistant","content":""}`...) }, "")
	for _, p := range pieces(r.Reasoning, size) {
		chunk(field("reasoning_content", p), "")
	}
	for _, p := range pieces(r.Text, size) {
		chunk(field("content", p), "")
	}
	for i, c := range r.Calls {
		chunk(func(b []byte) []byte {
			b = append(b, `{"tool_calls":[{"index":`+strconv.Itoa(i)+`,"id":`...)
			b = appendQuoted(b, callID(c, n, i))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendQuoted(b, c.Name)
			return append(b, `,"arguments":""}}]}`...)
		}, "")
		for _, p := range pieces(c.Args, size) {
			chunk(func(b []byte) []byte {
				b = append(b, `{"tool_calls":[{"index":`+strconv.Itoa(i)+`,"function":{"arguments":`...)
				return append(appendQuoted(b, p), "}}]}"...)
			}, "")
		}
	}
	chunk(func(b []byte) []byte { return append(b, "{}"...) }, chatFinish(r))
	in, outTok := sumUsage(r)
	out = append(out, []byte(`data: {"id":"chatcmpl-mock-`+strconv.Itoa(n)+`","object":"chat.completion.chunk","model":"mock","choices":[],"usage":{"prompt_tokens":`+
		strconv.FormatInt(in, 10)+`,"completion_tokens":`+strconv.FormatInt(outTok, 10)+`,"total_tokens":`+strconv.FormatInt(in+outTok, 10)+"}}\n\n"))
	return append(out, []byte("data: [DONE]\n\n"))
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// writeLean writes a pre-encoded stream, flushing after each event as
// streamChat does.
func writeLean(w http.ResponseWriter, events [][]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	for _, e := range events {
		w.Write(e)
		rc.Flush()
	}
}

// leanDecode decodes a request in lean mode: from where an earlier request
// of the same conversation ended when there is one, whole otherwise. The
// invariant error is in inv; err is for a body that cannot be read.
func (m *MockServer) leanDecode(body []byte) (items []llm.Item, stream bool, inv error) {
	m.mu.Lock()
	var conv *leanConv
	best := -1
	for i, c := range m.convs {
		if c.end < len(body) && (best < 0 || c.end > m.convs[best].end) && bytes.Equal(body[:c.end], c.body[:c.end]) {
			best = i
		}
	}
	if best >= 0 {
		// The conversation is taken out while it is extended, so that a
		// concurrent request of it starts a new one.
		conv = m.convs[best]
		m.convs = append(m.convs[:best], m.convs[best+1:]...)
	}
	m.mu.Unlock()

	var next *leanConv
	if conv != nil {
		next, stream = leanExtend(conv, body)
	}
	if next == nil {
		// Not a continuation, or one that does not decode or check from
		// there: the whole request, for the whole error.
		items, stream, inv = decodeChatRequest(body)
		if inv == nil {
			inv = llm.CheckHistory(items)
		}
		if inv == nil {
			next = leanStart(body, items)
		}
	}
	if next == nil || inv != nil {
		return items, stream, inv
	}
	m.mu.Lock()
	if len(m.convs) == maxLeanConvs {
		m.convs = append(m.convs[:0], m.convs[1:]...)
	}
	m.convs = append(m.convs, next)
	m.mu.Unlock()
	return next.items[:len(next.items):len(next.items)], stream, nil
}

// leanStart records a conversation from a request decoded whole; nil when
// its messages cannot be located or are empty.
func leanStart(body []byte, items []llm.Item) *leanConv {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	c := &leanConv{body: body, items: items, calls: make(map[string]bool)}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil
		}
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil
		}
		switch k {
		case "stream":
			var s bool
			json.Unmarshal(raw, &s)
			c.streamBefore = &s
		case "messages":
			c.end = int(d.InputOffset()) - 1
			if c.end < 0 || body[c.end] != ']' || bytes.Equal(bytes.TrimSpace(raw), []byte("[]")) {
				return nil
			}
			for i := range items {
				for _, call := range items[i].Calls() {
					c.calls[call.ID] = true
				}
			}
			return c
		}
	}
	return nil
}

// leanExtend decodes the messages after those of conv and checks the new
// items. It returns nil when body does not continue conv as expected or the
// new items break the invariants.
func leanExtend(conv *leanConv, body []byte) (*leanConv, bool) {
	items := conv.items
	from := len(items)
	pos, n := conv.end, 0
	for {
		pos = skipSpace(body, pos)
		if pos >= len(body) {
			return nil, false
		}
		if body[pos] == ']' {
			break
		}
		if body[pos] != ',' {
			return nil, false
		}
		pos++
		d := json.NewDecoder(bytes.NewReader(body[pos:]))
		var msg chatWireMessage
		if d.Decode(&msg) != nil {
			return nil, false
		}
		pos += int(d.InputOffset())
		var err error
		if items, err = appendChatMessage(items, from+n, &msg); err != nil {
			return nil, false
		}
		n++
	}
	next := &leanConv{body: body, end: pos, items: items, calls: conv.calls, streamBefore: conv.streamBefore}
	var stream bool
	if conv.streamBefore != nil {
		stream = *conv.streamBefore
	} else {
		rest := bytes.TrimLeft(body[pos+1:], " \t\r\n")
		if len(rest) > 0 && rest[0] == ',' {
			var tail struct {
				Stream bool `json:"stream"`
			}
			if json.Unmarshal(append([]byte{'{'}, rest[1:]...), &tail) != nil {
				return nil, false
			}
			stream = tail.Stream
		}
	}
	added := items[from:]
	if llm.CheckHistory(added) != nil {
		return nil, false
	}
	for i := range added {
		for _, call := range added[i].Calls() {
			if conv.calls[call.ID] {
				return nil, false
			}
		}
	}
	for i := range added {
		for _, call := range added[i].Calls() {
			next.calls[call.ID] = true
		}
	}
	return next, stream
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}
