package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3/responses"

	"github.com/tidwall/gjson"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
	"github.com/reinhq/rein/llm/transport"
)

// Responses is a model served over the Responses API.
type Responses struct {
	opts     Options
	endpoint *endpoint

	// The request body's encoding: input items by item, the last tools
	// array and the last body's size (see responsesBody).
	msgs     msgCache
	tools    atomic.Pointer[toolsCache]
	sizeHint atomic.Int64
}

// NewResponses returns a Responses API model.
func NewResponses(opts Options) *Responses {
	return &Responses{opts: opts, endpoint: opts.newEndpoint("responses")}
}

// OutputMode implements llm.OutputModer: a structured answer goes as
// text.format json_schema, unless the options ask for a forced tool call
// or the model runs in text tool mode.
func (r *Responses) OutputMode() llm.OutputMode {
	if r.opts.OutputTool || r.opts.TextTools {
		return llm.OutputTool
	}
	return llm.OutputNative
}

// ReadsHistory implements llm.HistoryReader: the input is encoded from
// the request's History and Items in turn.
func (r *Responses) ReadsHistory() bool { return true }

// Stream implements llm.Model.
func (r *Responses) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	body, err := r.responsesBody(req, !r.opts.NoStream)
	if err != nil {
		return nil, &llm.Error{Kind: llm.BadRequest, Provider: r.opts.name(), Message: err.Error(), Err: err}
	}
	resp, err := r.endpoint.post(ctx, body)
	if err != nil {
		return nil, err
	}
	a := &responsesAssembler{ctx: ctx, provider: r.opts.name(), text: newTextPath(req.Tools), calls: make(map[int64]*callAcc)}
	s := &eventStream{body: resp.Body}
	if isJSON(resp) {
		s.pull = func(emit func(llm.Event)) error { return a.readJSON(resp.Body, emit) }
		return s, nil
	}
	sr := sse.NewReader(resp.Body)
	s.read, s.provider = sr.Read, r.opts.name()
	s.pull = func(emit func(llm.Event)) error { return a.readEvent(sr, emit) }
	return s, nil
}

// responsesAssembler follows the Responses event stream (or reads a whole
// response) and yields events.
type responsesAssembler struct {
	ctx      context.Context
	provider string
	text     textPath
	model    string

	calls  map[int64]*callAcc // by output_index
	ncalls int
	items  map[int64]responses.ResponseOutputItemUnion // finished items by output_index
}

func (a *responsesAssembler) readEvent(r *sse.Reader, emit func(llm.Event)) error {
	if !r.Next() {
		if err := r.Err(); err != nil {
			return transportError(a.ctx, a.provider, err)
		}
		if err := a.ctx.Err(); err != nil {
			return err
		}
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "stream ended without response.completed"}
	}
	return a.readData(r.Data(), emit)
}

// readData reads one event's data.
func (a *responsesAssembler) readData(data []byte, emit func(llm.Event)) error {
	if !gjson.ValidBytes(data) {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "malformed event", Err: errMalformed}
	}
	// The deltas, most of a stream, are read with gjson; the events that
	// carry whole items go through the SDK's types (see readItemEvent).
	switch typ := gjson.GetBytes(data, "type").Str; typ {
	case "response.created", "response.in_progress":
		if m := gjson.GetBytes(data, "response.model"); m.Type == gjson.String && m.Str != "" {
			a.model = m.Str
		}
	case "response.output_text.delta", "response.refusal.delta":
		a.text.write(gjson.GetBytes(data, "delta").Str, emit)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		emit(llm.Event{Kind: llm.EventReasoning, Delta: gjson.GetBytes(data, "delta").Str})
	case "response.reasoning_summary_part.added":
		if gjson.GetBytes(data, "summary_index").Int() > 0 {
			// Summary parts are paragraphs; keep them apart on screen as in
			// the part's text.
			emit(llm.Event{Kind: llm.EventReasoning, Delta: "\n\n"})
		}
	case "response.function_call_arguments.delta":
		delta := gjson.GetBytes(data, "delta").Str
		if c := a.calls[gjson.GetBytes(data, "output_index").Int()]; c != nil && delta != "" {
			c.args = append(c.args, delta...)
			emit(llm.Event{Kind: llm.EventCallDelta, Index: c.ordinal, Delta: delta})
		}
	case "response.output_item.added", "response.output_item.done", "response.completed",
		"response.incomplete", "response.failed", "error":
		return a.readItemEvent(data, emit)
	}
	return nil
}

// readItemEvent reads an event that carries a whole item or response.
func (a *responsesAssembler) readItemEvent(data []byte, emit func(llm.Event)) error {
	var ev responses.ResponseStreamEventUnion
	if err := json.Unmarshal(data, &ev); err != nil {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "malformed event", Err: err}
	}
	switch ev.Type {
	case "response.output_item.added":
		if ev.Item.Type == "function_call" {
			a.startCall(ev.OutputIndex, &ev.Item, emit)
		}
	case "response.output_item.done":
		if a.items == nil {
			a.items = make(map[int64]responses.ResponseOutputItemUnion)
		}
		a.items[ev.OutputIndex] = ev.Item
		if ev.Item.Type == "function_call" {
			c := a.calls[ev.OutputIndex]
			if c == nil {
				c = a.startCall(ev.OutputIndex, &ev.Item, emit)
			}
			c.args = []byte(ev.Item.Arguments.OfString)
			if !c.done {
				c.done = true
				emit(llm.Event{Kind: llm.EventCallDone, Index: c.ordinal, Call: a.callOf(c, &ev.Item)})
			}
		}
	case "response.completed", "response.incomplete":
		resp := &ev.Response
		if len(resp.Output) == 0 {
			resp.Output = a.collected()
		}
		a.finishResponse(resp, emit)
		return io.EOF
	case "response.failed":
		e := ev.Response.Error
		return streamError(a.provider, errorBody{Message: e.Message, Type: e.Type, Code: quote(string(e.Code))})
	case "error":
		return streamError(a.provider, errorBody{Message: ev.Message, Code: quote(ev.Code)})
	}
	return nil
}

func quote(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	b, _ := json.Marshal(s)
	return b
}

func (a *responsesAssembler) startCall(index int64, item *responses.ResponseOutputItemUnion, emit func(llm.Event)) *callAcc {
	c := &callAcc{ordinal: a.ncalls, id: item.CallID, name: item.Name}
	if c.id == "" {
		c.id = newCallID()
	}
	a.ncalls++
	a.calls[index] = c
	emit(llm.Event{Kind: llm.EventCallStart, Index: c.ordinal, Call: &llm.Call{ID: c.id, Name: c.name, ItemID: item.ID}})
	return c
}

func (a *responsesAssembler) callOf(c *callAcc, item *responses.ResponseOutputItemUnion) *llm.Call {
	return &llm.Call{ID: c.id, Name: c.name, Args: string(c.args), ItemID: item.ID}
}

// collected returns the finished items in output order, for a terminal event
// that does not repeat them.
func (a *responsesAssembler) collected() []responses.ResponseOutputItemUnion {
	idx := make([]int64, 0, len(a.items))
	for i := range a.items {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]responses.ResponseOutputItemUnion, 0, len(idx))
	for _, i := range idx {
		out = append(out, a.items[i])
	}
	return out
}

// readJSON turns a whole response body into the events a stream would have
// produced.
func (a *responsesAssembler) readJSON(body io.Reader, emit func(llm.Event)) error {
	raw, err := transport.ReadAll(body)
	if err != nil {
		return transportError(a.ctx, a.provider, err)
	}
	var resp responses.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "malformed body", Err: err}
	}
	if resp.Status == "failed" || resp.Error.Message != "" {
		e := resp.Error
		return streamError(a.provider, errorBody{Message: e.Message, Type: e.Type, Code: quote(string(e.Code))})
	}
	for i := range resp.Output {
		item := &resp.Output[i]
		switch item.Type {
		case "reasoning":
			if t := reasoningText(item); t != "" {
				emit(llm.Event{Kind: llm.EventReasoning, Delta: t})
			}
		case "message":
			a.text.write(messageText(item), emit)
		case "function_call":
			c := a.startCall(int64(i), item, emit)
			c.args = []byte(item.Arguments.OfString)
			if len(c.args) > 0 {
				emit(llm.Event{Kind: llm.EventCallDelta, Index: c.ordinal, Delta: string(c.args)})
			}
			c.done = true
			emit(llm.Event{Kind: llm.EventCallDone, Index: c.ordinal, Call: a.callOf(c, item)})
		}
	}
	a.finishResponse(&resp, emit)
	return io.EOF
}

// finishResponse yields the done event with the output items as parts, in
// the provider's order.
func (a *responsesAssembler) finishResponse(resp *responses.Response, emit func(llm.Event)) {
	cleaned, textCalls := a.text.finish(emit)
	if resp.Model != "" {
		a.model = string(resp.Model)
	}
	var parts []llm.Part
	native := 0
	for i := range resp.Output {
		item := &resp.Output[i]
		switch item.Type {
		case "reasoning":
			parts = append(parts, llm.Part{
				Kind: llm.PartReasoning,
				Text: reasoningText(item),
				Opaque: &llm.Opaque{
					Provider:  ProviderResponses,
					ID:        item.ID,
					Encrypted: item.EncryptedContent,
					Raw:       json.RawMessage(item.RawJSON()),
				},
			})
		case "web_search_call":
			// The provider's own search, run on its side: kept as it
			// came, for replay (searchCallJSON), and empty to a reader.
			parts = append(parts, llm.Part{
				Kind:   llm.PartReasoning,
				Opaque: &llm.Opaque{Provider: ProviderResponses, ID: item.ID, Raw: compactJSON(item.RawJSON())},
			})
		case "message":
			parts = append(parts, llm.Part{
				Kind:   llm.PartText,
				Text:   messageText(item),
				Opaque: &llm.Opaque{Provider: ProviderResponses, ID: item.ID},
			})
		case "function_call":
			native++
			id := item.CallID
			if c := a.calls[int64(i)]; c != nil {
				id = c.id // the id already announced, fresh if the provider sent none
			} else if id == "" {
				id = newCallID()
			}
			parts = append(parts, llm.Part{Kind: llm.PartCall, Call: &llm.Call{
				ID: id, Name: item.Name, Args: item.Arguments.OfString, ItemID: item.ID,
			}})
		}
	}
	if native == 0 && len(textCalls) > 0 {
		// History keeps the text without the markup that made the calls.
		parts = withText(parts, cleaned)
		for i := range textCalls {
			call := textCalls[i]
			emit(llm.Event{Kind: llm.EventCallStart, Index: i, Call: &llm.Call{ID: call.ID, Name: call.Name, Format: call.Format}})
			emit(llm.Event{Kind: llm.EventCallDone, Index: i, Call: &call})
			parts = append(parts, llm.Part{Kind: llm.PartCall, Call: &call})
		}
	}
	u := resp.Usage
	usage := llm.Usage{
		InputTokens:       u.InputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.InputTokensDetails.CachedTokens,
		ReasoningTokens:   u.OutputTokensDetails.ReasoningTokens,
	}
	if resp.JSON.Usage.Valid() {
		uc := usage
		emit(llm.Event{Kind: llm.EventUsage, Usage: &uc})
	}
	finish, raw := responsesFinish(resp, native+len(textCalls) > 0)
	emit(llm.Event{Kind: llm.EventDone, Response: &llm.Response{
		Parts: parts, Finish: finish, RawFinish: raw, Usage: usage, Model: a.model,
	}})
}

func responsesFinish(resp *responses.Response, calls bool) (llm.FinishReason, string) {
	if resp.Status == "incomplete" {
		reason := resp.IncompleteDetails.Reason
		switch reason {
		case "max_output_tokens":
			return llm.FinishLength, reason
		case "content_filter":
			return llm.FinishContentFilter, reason
		}
		return llm.FinishOther, reason
	}
	if calls {
		return llm.FinishToolCalls, string(resp.Status)
	}
	return llm.FinishStop, string(resp.Status)
}

// reasoningText is the readable reasoning of an item: its summary
// paragraphs, or the raw reasoning text some models return instead.
func reasoningText(item *responses.ResponseOutputItemUnion) string {
	var parts []string
	for _, s := range item.Summary {
		parts = append(parts, s.Text)
	}
	if len(parts) == 0 {
		for _, c := range item.Content {
			if c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

func messageText(item *responses.ResponseOutputItemUnion) string {
	var b strings.Builder
	for _, c := range item.Content {
		switch c.Type {
		case "output_text":
			b.WriteString(c.Text)
		case "refusal":
			b.WriteString(c.Refusal)
		}
	}
	return b.String()
}

// withText replaces the message parts by one holding text, where the first
// stood.
func withText(parts []llm.Part, text string) []llm.Part {
	out := parts[:0]
	done := false
	for _, p := range parts {
		if p.Kind != llm.PartText {
			out = append(out, p)
			continue
		}
		if !done {
			p.Text = text
			out = append(out, p)
			done = true
		}
	}
	return out
}

// compactJSON returns raw without insignificant space, as it is replayed
// inside a request body; raw that is not JSON is kept as it came.
func compactJSON(raw string) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, []byte(raw)) != nil {
		return json.RawMessage(raw)
	}
	return b.Bytes()
}
