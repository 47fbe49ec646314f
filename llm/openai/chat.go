package openai

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/reinhq/rein/llm/internal/sse"

	"github.com/reinhq/rein/llm"
)

// Chat is a model served over Chat Completions. It is safe for concurrent
// use.
type Chat struct {
	opts     Options
	endpoint *endpoint
	// textTools is set from Options.TextTools, or once the server refused
	// tool definitions; it stays set, so later rounds and turns do not ask
	// again.
	textTools atomic.Bool

	// The request body's encoding: messages by item, the last tools array
	// and the last body's size (see chatBody).
	msgs     msgCache
	tools    atomic.Pointer[toolsCache]
	sizeHint atomic.Int64
}

// NewChat returns a Chat Completions model.
func NewChat(opts Options) *Chat {
	c := &Chat{opts: opts, endpoint: opts.newEndpoint("chat/completions")}
	c.textTools.Store(opts.TextTools)
	return c
}

// TextTools reports whether the model runs in text tool mode, configured
// or switched to after an [llm.ToolsUnsupported] error.
func (c *Chat) TextTools() bool { return c.textTools.Load() }

// OutputMode implements llm.OutputModer: a structured answer goes as
// response_format json_schema, unless the options or text tool mode say
// to ask for a forced tool call instead.
func (c *Chat) OutputMode() llm.OutputMode {
	if c.opts.OutputTool || c.textTools.Load() {
		return llm.OutputTool
	}
	return llm.OutputNative
}

// ReadsHistory implements llm.HistoryReader: the body is encoded from
// the request's History and Items in turn.
func (c *Chat) ReadsHistory() bool { return true }

// Stream implements llm.Model. A request with tools that the server refuses
// with an [llm.ToolsUnsupported] error — a structured code, or a known
// local server's wording (refusesTools) — is sent again in text tool mode,
// the model stays in that mode, and Options.ToolsRefused is told, once.
func (c *Chat) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	stream := !c.opts.NoStream
	text := c.textTools.Load()
	resp, err := c.send(ctx, req, stream, text)
	if err != nil && !text && len(req.Tools) > 0 && errors.Is(err, llm.ToolsUnsupported) {
		if c.textTools.CompareAndSwap(false, true) {
			c.opts.toolsRefused(err)
		}
		resp, err = c.send(ctx, req, stream, true)
	}
	if err != nil {
		return nil, err
	}
	a := newChatAssembler(ctx, c.opts.name(), req.Tools)
	s := &eventStream{body: resp.Body}
	if isJSON(resp) {
		s.pull = func(emit func(llm.Event)) error { return a.readJSON(resp.Body, emit) }
		return s, nil
	}
	r := sse.NewReader(resp.Body)
	s.read, s.provider = r.Read, c.opts.name()
	s.pull = func(emit func(llm.Event)) error { return a.readEvent(r, emit) }
	return s, nil
}

// send posts one request, in text tool mode or not.
func (c *Chat) send(ctx context.Context, req *llm.Request, stream, textTools bool) (*http.Response, error) {
	body, err := c.chatBody(req, stream, textTools)
	if err != nil {
		return nil, &llm.Error{Kind: llm.BadRequest, Provider: c.opts.name(), Message: err.Error(), Err: err}
	}
	return c.endpoint.post(ctx, body)
}

func isJSON(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json"
}

// chatAssembler builds one response from chunks or from a whole body and
// yields the events on the way.
type chatAssembler struct {
	ctx      context.Context
	provider string
	text     textPath

	reasoning       []byte
	reasoningFields []string // the fields reasoning arrived in, in order
	details         []map[string]any

	calls   []*callAcc
	byIndex map[int64]*callAcc

	finish string
	usage  llm.Usage
	model  string
}

// callAcc accumulates one call from its fragments.
type callAcc struct {
	ordinal int
	id      string
	name    string
	args    []byte
	started bool
	done    bool
}

func newChatAssembler(ctx context.Context, provider string, tools []llm.ToolSpec) *chatAssembler {
	return &chatAssembler{ctx: ctx, provider: provider, text: newTextPath(tools), byIndex: make(map[int64]*callAcc)}
}

// mergeDetail folds a streamed reasoning_details fragment into the entry of
// the same index: text pieces are concatenated, other fields kept.
func (a *chatAssembler) mergeDetail(d map[string]any) {
	idx := -1
	if f, ok := d["index"].(float64); ok {
		idx = int(f)
	}
	for _, have := range a.details {
		hi := -1
		if f, ok := have["index"].(float64); ok {
			hi = int(f)
		}
		if idx < 0 || hi != idx || have["type"] != d["type"] {
			continue
		}
		for k, v := range d {
			s, isStr := v.(string)
			prev, hadStr := have[k].(string)
			switch {
			case isStr && hadStr && (k == "text" || k == "summary" || k == "data" || k == "signature"):
				have[k] = prev + s
			case v != nil:
				have[k] = v
			}
		}
		return
	}
	a.details = append(a.details, d)
}

func (a *chatAssembler) callFragment(index int64, id, name, args string, emit func(llm.Event)) {
	c := a.byIndex[index]
	if c == nil {
		// A new index means the calls before it are complete when their
		// arguments parse: servers stream calls one after another, and a
		// tool may start before the stream ends.
		for _, prev := range a.calls {
			if prev.started && !prev.done && json.Valid(prev.args) {
				a.callDone(prev, emit)
			}
		}
		c = &callAcc{ordinal: len(a.calls)}
		a.byIndex[index] = c
		a.calls = append(a.calls, c)
	}
	if c.id == "" {
		c.id = id
	}
	if c.name == "" {
		c.name = name
	} else if name != "" && !c.started {
		c.name += name
	}
	c.args = append(c.args, args...)
	if !c.started && c.name != "" {
		c.started = true
		if c.id == "" {
			c.id = newCallID()
		}
		emit(llm.Event{Kind: llm.EventCallStart, Index: c.ordinal, Call: &llm.Call{ID: c.id, Name: c.name}})
		if len(c.args) > 0 {
			emit(llm.Event{Kind: llm.EventCallDelta, Index: c.ordinal, Delta: string(c.args)})
		}
		return
	}
	if c.started && args != "" {
		emit(llm.Event{Kind: llm.EventCallDelta, Index: c.ordinal, Delta: args})
	}
}

func (a *chatAssembler) callDone(c *callAcc, emit func(llm.Event)) {
	c.done = true
	emit(llm.Event{Kind: llm.EventCallDone, Index: c.ordinal, Call: c.call()})
}

func (c *callAcc) call() *llm.Call {
	return &llm.Call{ID: c.id, Name: c.name, Args: string(c.args)}
}

// finishResponse flushes the text path, completes the calls and yields the
// done event with the parts in the order the protocol implies: reasoning,
// text, calls.
func (a *chatAssembler) finishResponse(emit func(llm.Event)) {
	text, textCalls := a.text.finish(emit)
	var parts []llm.Part
	if len(a.reasoning) > 0 || len(a.details) > 0 {
		parts = append(parts, llm.Part{
			Kind:   llm.PartReasoning,
			Text:   string(a.reasoning),
			Opaque: &llm.Opaque{Provider: ProviderChat, Raw: a.reasoningRaw()},
		})
	}
	if text != "" {
		parts = append(parts, llm.Part{Kind: llm.PartText, Text: text})
	}
	native := 0
	for _, c := range a.calls {
		if !c.started {
			continue // a call without a name cannot be run or answered
		}
		if !c.done {
			a.callDone(c, emit)
		}
		parts = append(parts, llm.Part{Kind: llm.PartCall, Call: c.call()})
		native++
	}
	// Native calls win over calls written as text.
	if native == 0 {
		for i := range textCalls {
			call := textCalls[i]
			emit(llm.Event{Kind: llm.EventCallStart, Index: i, Call: &llm.Call{ID: call.ID, Name: call.Name, Format: call.Format}})
			emit(llm.Event{Kind: llm.EventCallDone, Index: i, Call: &call})
			parts = append(parts, llm.Part{Kind: llm.PartCall, Call: &call})
		}
	}
	resp := &llm.Response{
		Parts:     parts,
		RawFinish: a.finish,
		Finish:    chatFinish(a.finish, native > 0),
		Usage:     a.usage,
		Model:     a.model,
	}
	emit(llm.Event{Kind: llm.EventDone, Response: resp})
}

// reasoningRaw keeps the reasoning fields as the server named them, so they
// go back under the same names.
func (a *chatAssembler) reasoningRaw() json.RawMessage {
	m := make(map[string]any, 2)
	for _, f := range a.reasoningFields {
		m[f] = string(a.reasoning)
	}
	if len(a.details) > 0 {
		m["reasoning_details"] = a.details
	}
	// Strings and decoded JSON always marshal.
	b, _ := json.Marshal(m)
	return b
}

func chatFinish(raw string, calls bool) llm.FinishReason {
	switch raw {
	case "stop", "end_turn", "eos":
		return llm.FinishStop
	case "tool_calls", "function_call", "tool_use":
		return llm.FinishToolCalls
	case "length", "max_tokens", "model_length":
		return llm.FinishLength
	case "content_filter":
		return llm.FinishContentFilter
	case "":
		if calls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	}
	return llm.FinishOther
}
