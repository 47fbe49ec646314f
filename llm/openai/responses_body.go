package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/jsontext"
	"github.com/reinhq/rein/llm/textcall"
)

// The Responses request body is encoded here, as the Chat body is (see
// chat_body.go), rather than by the SDK's reflection over
// ResponseNewParams, which re-encoded the whole history every round. It
// means the same JSON as the SDK's encoding of responsesParams
// (responses_body_test.go compares the two on every request shape and on
// the recorded traffic). Each assistant and tool item's input items are
// encoded once and kept in the message cache.

// responsesBody encodes a request.
func (r *Responses) responsesBody(req *llm.Request, stream bool) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = r.opts.Model
	}
	textTools := r.opts.TextTools
	o := newObject(r.sizeHint.Load(), r.opts.Extra)
	system := req.System
	if textTools && len(req.Tools) > 0 {
		system = joinText(system, textcall.Instructions(req.Tools))
	}
	if system != "" {
		o.string("instructions", system)
	}
	if o.replaced("input") {
		// Replaced by the extra field, but still checked.
		if _, err := r.appendInput(nil, req, textTools); err != nil {
			return nil, err
		}
	} else {
		o.key("input")
		var err error
		if o.b, err = r.appendInput(o.b, req, textTools); err != nil {
			return nil, err
		}
	}
	o.string("model", model)
	store := r.opts.Store
	o.raw("store", strconv.AppendBool(nil, store))
	effort, summary := r.opts.ReasoningEffort, r.opts.ReasoningSummary
	// Without storage the reasoning must travel back encrypted. Models that
	// do not reason refuse the include, so it is asked of reasoning models
	// and whenever reasoning is configured.
	if !store && (effort != "" || summary != "" || TokenParamFor(model) == MaxCompletionTokens) {
		o.raw("include", []byte(`["reasoning.encrypted_content"]`))
	}
	if (effort != "" || summary != "") && o.field("reasoning") {
		ro := newObject(0, nil)
		if effort != "" {
			ro.string("effort", effort)
		}
		if summary != "" {
			ro.string("summary", summary)
		}
		b, _ := ro.finish(false) // no extra fields: cannot fail
		o.b = append(o.b, b...)
	}
	if len(req.Tools) > 0 && !textTools {
		if err := o.tools(req, r.opts.ParallelToolCalls, &r.tools, responsesTool, responsesForced); err != nil {
			return nil, err
		}
	}
	if out := req.Output; out != nil && o.field("text") {
		o.b = append(o.b, `{"format":`...)
		o.b = appendOutputFormat(o.b, out, true)
		o.b = append(o.b, '}')
	}
	if n := req.MaxOutputTokens; n > 0 {
		o.int("max_output_tokens", int64(n))
	}
	if err := o.temperature(req.Temperature); err != nil {
		return nil, err
	}
	b, err := o.finish(stream)
	if err != nil {
		return nil, err
	}
	r.sizeHint.Store(int64(len(b)))
	return b, nil
}

// responsesTool writes one tool of the Responses tools array. Strict is
// sent as false: the Responses API defaults to strict schemas, which
// ordinary JSON Schemas fail.
//
// The one builtin of the Responses API rein offers is web_search, sent as
// {"type":"web_search"}; another builtin is left out.
func responsesTool(b []byte, s *llm.ToolSpec, params []byte) []byte {
	switch s.Builtin {
	case "":
	case llm.BuiltinWebSearch:
		return append(b, `{"type":"web_search"}`...)
	default:
		return b
	}
	b = append(b, `{"type":"function","name":`...)
	b = jsontext.AppendString(b, s.Name)
	if s.Description != "" {
		b = append(b, `,"description":`...)
		b = jsontext.AppendString(b, s.Description)
	}
	b = append(b, `,"parameters":`...)
	b = append(b, params...)
	return append(b, `,"strict":false}`...)
}

// responsesForced writes the tool_choice that forces a call of name.
func responsesForced(b []byte, name string) []byte {
	b = append(b, `{"type":"function","name":`...)
	b = jsontext.AppendString(b, name)
	return append(b, '}')
}

// appendInput appends the input array: the request's items (History, then
// Items) as responsesInput makes them.
func (r *Responses) appendInput(b []byte, req *llm.Request, textTools bool) ([]byte, error) {
	b = append(b, '[')
	first := true
	open := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	var user userText
	flushUser := func() {
		if text, ok := user.take(); ok {
			open()
			b = appendTextMessage(b, "user", text)
		}
	}
	k := msgKind{assistant: true, textTools: textTools}
	for i, it := range req.All() {
		switch it.Role {
		case llm.RoleUser:
			user.text(it.Text())
		case llm.RoleAssistant:
			if lastOutput(it) < 0 {
				// Nothing of it can be sent (reasoning alone): the user
				// messages around it stay one message.
				continue
			}
			flushUser()
			open()
			b = r.msgs.appendWith(b, it, k, r.encodeAssistant)
		case llm.RoleTool:
			res := it.Result()
			if res == nil {
				return nil, fmt.Errorf("item %d: tool item without a result", i)
			}
			if textTools {
				user.result(*res)
				continue
			}
			flushUser()
			open()
			b = r.msgs.appendWith(b, it, msgKind{}, encodeFunctionOutput)
		default:
			return nil, fmt.Errorf("item %d: unknown role %q", i, it.Role)
		}
	}
	flushUser()
	return append(b, ']'), nil
}

// encodeFunctionOutput encodes a tool item as a function_call_output.
func encodeFunctionOutput(b []byte, it *llm.Item, _ msgKind) []byte {
	res := it.Result()
	b = append(b, `{"type":"function_call_output","call_id":`...)
	b = jsontext.AppendString(b, res.CallID)
	b = append(b, `,"output":`...)
	b = jsontext.AppendString(b, res.Content)
	return append(b, '}')
}

// encodeAssistant encodes an assistant item as its input items, comma
// separated, in the order of appendAssistant: its text as messages, its
// reasoning (up to its last output) and its calls in place.
func (r *Responses) encodeAssistant(b []byte, it *llm.Item, k msgKind) []byte {
	store := r.opts.Store
	n := 0
	item := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	var text strings.Builder
	var textCalls []llm.Call
	flushText := func() {
		if len(textCalls) > 0 {
			s := joinText(text.String(), textcall.Format(textCalls))
			text.Reset()
			text.WriteString(s)
			textCalls = textCalls[:0]
		}
		if text.Len() > 0 {
			item()
			b = appendTextMessage(b, "assistant", text.String())
			text.Reset()
		}
	}
	last := lastOutput(it)
	for i, p := range it.Parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartReasoning:
			if i > last {
				continue
			}
			if raw, search := searchCallJSON(p, store); search {
				if raw != nil {
					flushText()
					item()
					b = append(b, raw...)
				}
				continue
			}
			if raw, ok := reasoningJSON(p, store); ok {
				flushText()
				item()
				b = append(b, raw...)
			}
		case llm.PartCall:
			if p.Call == nil {
				continue
			}
			if k.textTools {
				textCalls = append(textCalls, *p.Call)
				continue
			}
			flushText()
			item()
			b = append(b, `{"type":"function_call","call_id":`...)
			b = jsontext.AppendString(b, p.Call.ID)
			b = append(b, `,"name":`...)
			b = jsontext.AppendString(b, p.Call.Name)
			b = append(b, `,"arguments":`...)
			b = jsontext.AppendString(b, argsOrEmpty(p.Call.Args))
			if store && p.Call.ItemID != "" {
				b = append(b, `,"id":`...)
				b = jsontext.AppendString(b, p.Call.ItemID)
			}
			b = append(b, '}')
		}
	}
	flushText()
	return b
}

// searchCallJSON returns a kept web_search_call item as it was returned,
// and whether the part is one. It goes back only when the response was
// stored (store): the API looks the call up by its id, and an id it did
// not store is refused, so without store the call stays in history only
// and the answer's text carries what was found.
func searchCallJSON(p llm.Part, store bool) ([]byte, bool) {
	o := p.Opaque
	if o == nil || o.Provider != ProviderResponses || len(o.Raw) == 0 {
		return nil, false
	}
	var kept struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(o.Raw, &kept) != nil || kept.Type != "web_search_call" {
		return nil, false
	}
	if !store {
		return nil, true
	}
	return o.Raw, true
}

// reasoningJSON is the reasoning input item reasoningInput builds, encoded.
func reasoningJSON(p llm.Part, store bool) ([]byte, bool) {
	o := p.Opaque
	if o == nil || o.Provider != ProviderResponses {
		return nil, false
	}
	if !store && o.Encrypted == "" || store && o.ID == "" {
		return nil, false
	}
	item := map[string]any{"type": "reasoning", "summary": []any{}}
	var kept struct {
		Summary json.RawMessage `json:"summary"`
	}
	if json.Unmarshal(o.Raw, &kept) == nil && len(kept.Summary) > 0 && string(kept.Summary) != "null" {
		item["summary"] = kept.Summary
	} else if p.Text != "" {
		item["summary"] = []any{map[string]any{"type": "summary_text", "text": p.Text}}
	}
	if o.Encrypted != "" {
		item["encrypted_content"] = o.Encrypted
	}
	if store {
		item["id"] = o.ID
	}
	// Strings and JSON decoded above always marshal.
	raw, _ := json.Marshal(item)
	return raw, true
}

// lastOutput is the index of the item's last part the API counts as output
// (text or a call), or -1.
func lastOutput(it *llm.Item) int {
	last := -1
	for i, p := range it.Parts {
		if (p.Kind == llm.PartText && p.Text != "") || (p.Kind == llm.PartCall && p.Call != nil) {
			last = i
		}
	}
	return last
}
