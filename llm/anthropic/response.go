package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
	"github.com/reinhq/rein/llm/transport"
)

// assembler turns Messages events — streamed, or replayed from a complete
// response — into rein events and the final response. Both paths go through
// it so streaming and non-streaming calls produce the same events.
type assembler struct {
	queue []llm.Event
	head  int

	id, model  string
	blocks     []*block // by content block index
	calls      int
	stopReason string
	usage      usage
	started    bool
	stopped    bool
	// shown reports that an event the user may have seen (text,
	// reasoning, call) was produced, so a later error is not retried
	// silently.
	shown bool

	// tools are the request's tools, which type the arguments of calls
	// written as text; catalog is built from them when first needed.
	tools   []llm.ToolSpec
	catalog *textcall.Catalog
	emitFn  func(llm.Event)
}

// block is one content block being assembled.
type block struct {
	typ       string
	text      strings.Builder // text, or thinking text
	signature strings.Builder
	data      string // redacted_thinking data
	id, name  string
	input     strings.Builder // tool_use input_json_delta fragments
	// startInput is the input the block started with: the whole input of a
	// non-streamed tool_use, {} when streamed.
	startInput json.RawMessage
	raw        string // the block as received, for kinds rein keeps opaque
	call       int    // call index of a tool_use
	path       *textPath
	stopped    bool
}

// usage collects token counts as Anthropic reports them: input_tokens
// excludes the tokens read from or written to the prompt cache.
type usage struct {
	input, cacheWrite, cacheRead, output, thinking int64
}

func (u usage) llm() llm.Usage {
	return llm.Usage{
		// rein counts every prompt token as input, with the cached ones
		// as a subset, as the OpenAI protocols do.
		InputTokens:       u.input + u.cacheWrite + u.cacheRead,
		OutputTokens:      u.output,
		CachedInputTokens: u.cacheRead,
		CacheWriteTokens:  u.cacheWrite,
		ReasoningTokens:   u.thinking,
	}
}

func (a *assembler) init(tools []llm.ToolSpec) {
	a.queue = make([]llm.Event, 0, 8)
	a.tools = tools
	a.emitFn = a.emit
}

// next pops the next pending event.
func (a *assembler) next() (llm.Event, bool) {
	if a.head == len(a.queue) {
		a.queue = a.queue[:0]
		a.head = 0
		return llm.Event{}, false
	}
	ev := a.queue[a.head]
	a.queue[a.head] = llm.Event{}
	a.head++
	return ev, true
}

// output reports whether the pending events carry output.
func (a *assembler) output() bool {
	for _, ev := range a.queue[a.head:] {
		if transport.Output(ev) {
			return true
		}
	}
	return false
}

func (a *assembler) emit(ev llm.Event) {
	switch ev.Kind {
	case llm.EventText, llm.EventReasoning, llm.EventCallStart, llm.EventCallDelta, llm.EventCallDone:
		a.shown = true
	}
	a.queue = append(a.queue, ev)
}

func protocolError(format string, args ...any) error {
	return &llm.Error{Kind: llm.StreamInterrupted, Provider: Provider, Message: fmt.Sprintf(format, args...)}
}

// message replays a complete response as the events a stream would carry.
func (a *assembler) message(msg *sdk.Message) error {
	a.start(msg.ID, string(msg.Model), usageOf(&msg.Usage))
	for i := range msg.Content {
		c := &msg.Content[i]
		bs := blockStart{
			typ: c.Type, text: c.Text, thinking: c.Thinking, signature: c.Signature,
			data: c.Data, id: c.ID, name: c.Name, input: c.Input, raw: c.RawJSON(),
		}
		if c.Type == "tool_use" {
			// Deliver the input as the one delta a stream would have
			// split it into.
			bs.input = nil
		}
		if err := a.blockStart(i, bs); err != nil {
			return err
		}
		if c.Type == "tool_use" {
			if err := a.delta(i, "input_json_delta", string(c.Input)); err != nil {
				return err
			}
		}
		if err := a.blockStop(i); err != nil {
			return err
		}
	}
	a.stopReason = string(msg.StopReason)
	return a.finish()
}

// event handles one streamed event.
func (a *assembler) event(ev *sdk.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		a.start(ev.Message.ID, string(ev.Message.Model), usageOf(&ev.Message.Usage))
	case "content_block_start":
		cb := &ev.ContentBlock
		bs := blockStart{
			typ: cb.Type, text: cb.Text, thinking: cb.Thinking, signature: cb.Signature,
			data: cb.Data, id: cb.ID, name: cb.Name, raw: cb.RawJSON(),
		}
		if cb.JSON.Input.Valid() {
			bs.input = json.RawMessage(cb.JSON.Input.Raw())
		}
		return a.blockStart(int(ev.Index), bs)
	case "content_block_delta":
		return a.delta(int(ev.Index), ev.Delta.Type, deltaPayload(&ev.Delta))
	case "content_block_stop":
		return a.blockStop(int(ev.Index))
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stopReason = string(ev.Delta.StopReason)
		}
		a.deltaUsage(deltaUsageOf(&ev.Usage))
	case "message_stop":
		return a.finish()
	}
	// Unknown event types are future additions the API documents clients
	// should ignore.
	return nil
}

func (a *assembler) start(id, model string, u usage) {
	a.started = true
	a.id, a.model = id, model
	a.usage = u
}

func usageOf(u *sdk.Usage) usage {
	return usage{
		input:      u.InputTokens,
		cacheWrite: u.CacheCreationInputTokens,
		cacheRead:  u.CacheReadInputTokens,
		output:     u.OutputTokens,
		thinking:   u.OutputTokensDetails.ThinkingTokens,
	}
}

// count is a token count of message_delta, which may leave it out.
type count struct {
	n    int64
	sent bool
}

// usageDelta is message_delta's usage.
type usageDelta struct {
	input, cacheWrite, cacheRead, output, thinking count
}

func deltaUsageOf(u *sdk.MessageDeltaUsage) usageDelta {
	return usageDelta{
		input:      count{u.InputTokens, u.JSON.InputTokens.Valid()},
		cacheWrite: count{u.CacheCreationInputTokens, u.JSON.CacheCreationInputTokens.Valid()},
		cacheRead:  count{u.CacheReadInputTokens, u.JSON.CacheReadInputTokens.Valid()},
		output:     count{u.OutputTokens, u.JSON.OutputTokens.Valid()},
		thinking:   count{u.OutputTokensDetails.ThinkingTokens, u.OutputTokensDetails.JSON.ThinkingTokens.Valid()},
	}
}

// deltaUsage applies message_delta usage, whose counts are cumulative; a
// count left out keeps the message_start value.
func (a *assembler) deltaUsage(u usageDelta) {
	for _, c := range [...]struct {
		dst *int64
		c   count
	}{
		{&a.usage.input, u.input},
		{&a.usage.cacheWrite, u.cacheWrite},
		{&a.usage.cacheRead, u.cacheRead},
		{&a.usage.output, u.output},
		{&a.usage.thinking, u.thinking},
	} {
		if c.c.sent {
			*c.dst = c.c.n
		}
	}
}

// blockStart is what a content block starts with.
type blockStart struct {
	typ, text, thinking, signature, data, id, name string
	input                                          json.RawMessage
	raw                                            string
}

func (a *assembler) blockStart(index int, bs blockStart) error {
	if !a.started {
		return protocolError("content block before message_start")
	}
	if index != len(a.blocks) {
		return protocolError("content block %d started out of order", index)
	}
	b := &block{typ: bs.typ}
	a.blocks = append(a.blocks, b)
	switch bs.typ {
	case "text":
		if a.catalog == nil {
			a.catalog = textcall.NewCatalog(a.tools)
		}
		b.path = newTextPath(a.catalog)
		a.text(b, bs.text)
	case "thinking":
		a.thinking(b, bs.thinking)
		b.signature.WriteString(bs.signature)
	case "redacted_thinking":
		b.data = bs.data
	case "tool_use":
		b.id, b.name, b.startInput = bs.id, bs.name, bs.input
		b.call = a.calls
		a.calls++
		a.emit(llm.Event{Kind: llm.EventCallStart, Index: b.call, Call: &llm.Call{ID: b.id, Name: b.name}})
	default:
		b.raw = bs.raw
	}
	return nil
}

func (a *assembler) text(b *block, s string) {
	if s == "" {
		return
	}
	b.text.WriteString(s)
	b.path.write(s, a.emitFn)
}

func (a *assembler) thinking(b *block, s string) {
	if s == "" {
		return
	}
	b.text.WriteString(s)
	a.emit(llm.Event{Kind: llm.EventReasoning, Delta: s})
}

// deltaPayload is the field of a decoded delta that its type carries.
func deltaPayload(d *sdk.MessageStreamEventUnionDelta) string {
	switch d.Type {
	case "text_delta":
		return d.Text
	case "thinking_delta":
		return d.Thinking
	case "signature_delta":
		return d.Signature
	case "input_json_delta":
		return d.PartialJSON
	}
	return ""
}

// delta applies a content_block_delta of type typ whose field (text,
// thinking, signature or partial_json, by type) is s.
func (a *assembler) delta(index int, typ, s string) error {
	b, err := a.open(index)
	if err != nil {
		return err
	}
	switch typ {
	case "text_delta":
		if b.typ != "text" {
			return protocolError("text delta for a %s block", b.typ)
		}
		a.text(b, s)
	case "thinking_delta":
		if b.typ != "thinking" {
			return protocolError("thinking delta for a %s block", b.typ)
		}
		a.thinking(b, s)
	case "signature_delta":
		// Appended in place: a string concatenation per delta would
		// copy the whole signature each time.
		b.signature.WriteString(s)
	case "input_json_delta":
		if s == "" {
			return nil
		}
		b.input.WriteString(s)
		if b.typ == "tool_use" {
			a.emit(llm.Event{Kind: llm.EventCallDelta, Index: b.call, Delta: s})
		}
	}
	// Other deltas (citations) add nothing rein keeps.
	return nil
}

func (a *assembler) open(index int) (*block, error) {
	if index < 0 || index >= len(a.blocks) {
		return nil, protocolError("event for content block %d, which never started", index)
	}
	b := a.blocks[index]
	if b.stopped {
		return nil, protocolError("event for content block %d after it stopped", index)
	}
	return b, nil
}

func (a *assembler) blockStop(index int) error {
	b, err := a.open(index)
	if err != nil {
		return err
	}
	b.stopped = true
	switch b.typ {
	case "tool_use":
		a.emit(llm.Event{Kind: llm.EventCallDone, Index: b.call, Call: b.toCall()})
	case "text":
		b.path.flush(a.emitFn)
	}
	return nil
}

// args returns the argument text of a tool_use block as received.
func (b *block) args() string {
	if b.input.Len() > 0 {
		return b.input.String()
	}
	if len(b.startInput) > 0 {
		return string(b.startInput)
	}
	return "{}"
}

func (b *block) toCall() *llm.Call {
	return &llm.Call{ID: b.id, Name: b.name, Args: b.args()}
}

// part returns the rein part for a finished block, or false for a block that
// holds nothing (an empty text block).
func (b *block) part() (llm.Part, bool) {
	switch b.typ {
	case "text":
		if b.text.Len() == 0 {
			return llm.Part{}, false
		}
		if len(b.path.calls) > 0 {
			// History keeps the text without the markup that made
			// calls (DESIGN §5.2), whether or not the calls are used;
			// inline reasoning stays as written.
			if b.path.thought {
				return llm.Part{Kind: llm.PartText, Text: textcall.Clean(b.text.String(), textcall.Options{Catalog: b.path.catalog})}, true
			}
			if b.path.visible.Len() == 0 {
				return llm.Part{}, false
			}
			return llm.Part{Kind: llm.PartText, Text: b.path.visible.String()}, true
		}
		return llm.Part{Kind: llm.PartText, Text: b.text.String()}, true
	case "thinking":
		return llm.Part{Kind: llm.PartReasoning, Text: b.text.String(),
			Opaque: &llm.Opaque{Provider: Provider, Signature: b.signature.String()}}, true
	case "redacted_thinking":
		return llm.Part{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: Provider, Encrypted: b.data}}, true
	case "tool_use":
		return llm.Part{Kind: llm.PartCall, Call: b.toCall()}, true
	}
	// A block rein has no part kind for is kept verbatim as provider
	// reasoning: replayed unchanged to Anthropic, never sent to another
	// provider, and empty to a reader.
	raw := b.raw
	if b.input.Len() > 0 {
		raw = withInput(raw, b.input.String())
	}
	return llm.Part{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: Provider, Raw: json.RawMessage(raw)}}, true
}

// withInput returns the raw block with its input replaced by the streamed
// one (a server_tool_use starts with input {} and streams the rest).
func withInput(raw, input string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil || !json.Valid([]byte(input)) {
		return raw
	}
	m["input"] = json.RawMessage(input)
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return string(out)
}

// finish handles message_stop: it emits the usage and the response.
func (a *assembler) finish() error {
	if !a.started {
		return protocolError("message_stop before message_start")
	}
	for i, b := range a.blocks {
		if !b.stopped {
			return protocolError("message_stop with content block %d still open", i)
		}
	}
	resp := &llm.Response{
		Parts:     make([]llm.Part, 0, len(a.blocks)),
		Finish:    finishReason(a.stopReason),
		RawFinish: a.stopReason,
		Usage:     a.usage.llm(),
		Model:     a.model,
	}
	// Calls written as text count only when the model made no native
	// call: native calls win (DESIGN §5.2). They are announced only now,
	// since a native call may follow the text that held them.
	textCalls := a.calls == 0
	for _, b := range a.blocks {
		if p, ok := b.part(); ok {
			resp.Parts = append(resp.Parts, p)
		}
		if b.path == nil || !textCalls {
			continue
		}
		for i := range b.path.calls {
			c := b.path.calls[i]
			c.Format = llm.CallText
			idx := a.calls
			a.calls++
			a.emit(llm.Event{Kind: llm.EventCallStart, Index: idx, Call: &llm.Call{ID: c.ID, Name: c.Name, Format: c.Format}})
			a.emit(llm.Event{Kind: llm.EventCallDone, Index: idx, Call: &c})
			resp.Parts = append(resp.Parts, llm.Part{Kind: llm.PartCall, Call: &c})
		}
	}
	if a.calls > 0 && resp.Finish == llm.FinishStop {
		resp.Finish = llm.FinishToolCalls
	}
	a.stopped = true
	u := resp.Usage
	a.emit(llm.Event{Kind: llm.EventUsage, Usage: &u})
	a.emit(llm.Event{Kind: llm.EventDone, Response: resp})
	return nil
}

// finishReason normalizes stop_reason.
func finishReason(s string) llm.FinishReason {
	switch s {
	case "end_turn", "stop_sequence":
		return llm.FinishStop
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		// Both cut the output at a token limit: the cap asked for, or
		// the model's context window.
		return llm.FinishLength
	case "refusal":
		return llm.FinishContentFilter
	}
	// pause_turn (a server tool loop paused) and anything newer.
	return llm.FinishOther
}
