package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
	"github.com/reinhq/rein/llm/transport"
)

// sseStream is a streamed call: it reads server-sent events as Recv asks for
// them, so an event reaches the caller as soon as its bytes arrive.
type sseStream struct {
	ctx    context.Context
	resp   *http.Response
	sse    *sse.Reader
	asm    assembler
	err    error
	closed bool
	// silence bounds the bytes that carry no output (llm/transport).
	silence transport.Silence
}

func newSSEStream(ctx context.Context, resp *http.Response, tools []llm.ToolSpec) *sseStream {
	st := &sseStream{ctx: ctx, resp: resp, sse: sse.NewReader(resp.Body)}
	st.asm.init(tools)
	return st
}

func (s *sseStream) Recv() (llm.Event, error) {
	for {
		if ev, ok := s.asm.next(); ok {
			return ev, nil
		}
		if s.asm.stopped {
			s.Close()
			return llm.Event{}, io.EOF
		}
		if s.err != nil {
			return llm.Event{}, s.err
		}
		if s.closed {
			return llm.Event{}, io.EOF
		}
		if err := s.read(); err != nil {
			markShown(err, s.asm.shown)
			s.err = err
			s.Close()
		}
	}
}

// read handles the next event. It skips what the SDK's stream skipped:
// events without a name, "ping" and events without data; an "error" event
// ends the stream with the API error it carries.
//
// The bytes of events that yield no output — pings, ignored events,
// signatures — are bounded on their own (llm/transport.MaxSilent).
func (s *sseStream) read() error {
	before := s.sse.Read()
	for s.sse.Next() {
		switch string(s.sse.Event()) {
		case "", "ping":
			if err := s.silent(&before); err != nil {
				return err
			}
			continue
		case "error":
			return mapError(s.ctx, eventError(s.resp, s.sse.Data()), s.asm.shown)
		}
		data := s.sse.Data()
		if len(data) == 0 {
			if err := s.silent(&before); err != nil {
				return err
			}
			continue
		}
		if err := s.asm.data(data); err != nil {
			return err
		}
		if !s.asm.output() {
			return s.silent(&before)
		}
		return nil
	}
	if err := s.sse.Err(); err != nil {
		return mapError(s.ctx, err, s.asm.shown)
	}
	return &llm.Error{Kind: llm.StreamInterrupted, Provider: Provider, Shown: s.asm.shown,
		Message: "the stream ended without message_stop"}
}

// silent counts the bytes read since *before as silent and moves *before
// on.
func (s *sseStream) silent(before *int64) error {
	now := s.sse.Read()
	err := s.silence.Add(now - *before)
	*before = now
	if err != nil {
		return transport.TooLarge(Provider, err)
	}
	return nil
}

func (s *sseStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.resp.Body.Close()
}

// data handles one event's data. It is read with gjson rather than decoded
// into the SDK's union type, whose reflective decoder was a fifth of the CPU
// of a streamed round (bench/RESULTS-providers.md). It reads every event
// exactly as the SDK read it: the SDK's decoder is built on gjson too (the
// first of repeated keys wins, strings are unescaped by gjson), and only
// values of the types the API sends are read here — a string, a number, an
// object, or null or absent for the zero value. An event holding anything
// else, which the SDK would coerce (a number where a string belongs), goes
// through the SDK's union type, as does an event of a type not read here.
// event_test.go checks this against the SDK's decoding of every recorded
// stream, and a fuzz target against arbitrary events.
func (a *assembler) data(data []byte) error {
	if !gjson.ValidBytes(data) {
		return a.sdkData(data)
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return a.sdkData(data)
	}
	if read, err := a.readEvent(root); read {
		return err
	}
	return a.sdkData(data)
}

// readEvent handles the event ev and reports whether it did; an event it
// leaves to the SDK leaves the assembler untouched.
func (a *assembler) readEvent(ev gjson.Result) (read bool, err error) {
	r := reader{}
	typ := r.str(ev, "type")
	switch typ {
	case "content_block_delta":
		index := r.num(ev, "index")
		delta := r.object(ev, "delta")
		dtyp := r.str(delta, "type")
		var payload string
		switch dtyp {
		case "text_delta":
			payload = r.str(delta, "text")
		case "thinking_delta":
			payload = r.str(delta, "thinking")
		case "signature_delta":
			payload = r.str(delta, "signature")
		case "input_json_delta":
			payload = r.str(delta, "partial_json")
		}
		if r.unusual {
			return false, nil
		}
		return true, a.delta(int(index.n), dtyp, payload)
	case "content_block_stop":
		index := r.num(ev, "index")
		if r.unusual {
			return false, nil
		}
		return true, a.blockStop(int(index.n))
	case "content_block_start":
		index := r.num(ev, "index")
		cb := r.object(ev, "content_block")
		bs := blockStart{
			typ:       r.str(cb, "type"),
			text:      r.str(cb, "text"),
			thinking:  r.str(cb, "thinking"),
			signature: r.str(cb, "signature"),
			data:      r.str(cb, "data"),
			id:        r.str(cb, "id"),
			name:      r.str(cb, "name"),
			raw:       cb.Raw,
		}
		if in := cb.Get("input"); in.Type != gjson.Null {
			bs.input = json.RawMessage(in.Raw)
		}
		if r.unusual {
			return false, nil
		}
		return true, a.blockStart(int(index.n), bs)
	case "message_start":
		msg := r.object(ev, "message")
		id, model := r.str(msg, "id"), r.str(msg, "model")
		u := r.object(msg, "usage")
		details := r.object(u, "output_tokens_details")
		us := usage{
			input:      r.num(u, "input_tokens").n,
			cacheWrite: r.num(u, "cache_creation_input_tokens").n,
			cacheRead:  r.num(u, "cache_read_input_tokens").n,
			output:     r.num(u, "output_tokens").n,
			thinking:   r.num(details, "thinking_tokens").n,
		}
		if r.unusual {
			return false, nil
		}
		a.start(id, model, us)
	case "message_delta":
		stop := r.str(r.object(ev, "delta"), "stop_reason")
		u := r.object(ev, "usage")
		ud := usageDelta{
			input:      r.num(u, "input_tokens"),
			cacheWrite: r.num(u, "cache_creation_input_tokens"),
			cacheRead:  r.num(u, "cache_read_input_tokens"),
			output:     r.num(u, "output_tokens"),
			thinking:   r.num(r.object(u, "output_tokens_details"), "thinking_tokens"),
		}
		if r.unusual {
			return false, nil
		}
		if stop != "" {
			a.stopReason = stop
		}
		a.deltaUsage(ud)
	case "message_stop":
		if r.unusual {
			return false, nil
		}
		return true, a.finish()
	default:
		// Unknown types (ping under another name, future additions) and
		// a type that is not a string.
		return false, nil
	}
	return true, nil
}

// reader reads fields as the SDK's decoder reads them into its types, and
// notes a value of a type it leaves to the SDK.
type reader struct{ unusual bool }

// str reads a string field: "" when absent or null.
func (r *reader) str(obj gjson.Result, key string) string {
	v := obj.Get(key)
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Null:
		return ""
	}
	r.unusual = true
	return ""
}

// num reads an integer field, sent when present and not null, as the SDK's
// respjson.Field.Valid says.
func (r *reader) num(obj gjson.Result, key string) count {
	v := obj.Get(key)
	switch v.Type {
	case gjson.Number:
		return count{v.Int(), true}
	case gjson.Null:
		return count{}
	}
	r.unusual = true
	return count{}
}

// object reads an object field; absent or null reads as an empty object.
func (r *reader) object(obj gjson.Result, key string) gjson.Result {
	v := obj.Get(key)
	switch {
	case v.IsObject():
		return v
	case v.Type == gjson.Null:
		return gjson.Result{}
	}
	r.unusual = true
	return gjson.Result{}
}

// sdkData decodes one event's data into the SDK's union type.
func (a *assembler) sdkData(data []byte) error {
	var ev sdk.MessageStreamEventUnion
	if err := json.Unmarshal(data, &ev); err != nil {
		// As mapError types a garbled event.
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: Provider, Err: err}
	}
	return a.event(&ev)
}
