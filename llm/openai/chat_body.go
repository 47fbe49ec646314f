package openai

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/jsontext"
	"github.com/reinhq/rein/llm/textcall"
)

// The Chat Completions request body is encoded here rather than by the
// SDK's reflection over ChatCompletionNewParams, which re-encoded the whole
// history on every round. The body means the same JSON as the SDK's (the
// tests compare the two on every request shape and on the recorded
// traffic): the fields are written in another order, and extra fields
// (Options.Extra, reasoning fields replayed on an assistant message)
// replace the fields of the same name as the SDK's do.
//
// Each assistant and tool message is encoded once and kept in a cache keyed
// by the item's parts (see msgCache): earlier items do not change within a
// thread, and an item that did change (a pause answer written over its
// placeholder, a compacted history) no longer matches its entry and is
// encoded again.

// chatBody encodes a request, in text tool mode or not. In text tool mode
// the tools are not sent as definitions: they are described in the system
// prompt.
func (c *Chat) chatBody(req *llm.Request, stream, textTools bool) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = c.opts.Model
	}
	o := newObject(c.sizeHint.Load(), c.opts.Extra)
	if o.replaced("messages") {
		// Replaced by the extra field, but still checked.
		if _, err := c.appendMessages(nil, req, textTools); err != nil {
			return nil, err
		}
	} else {
		o.key("messages")
		var err error
		if o.b, err = c.appendMessages(o.b, req, textTools); err != nil {
			return nil, err
		}
	}
	o.string("model", model)
	if len(req.Tools) > 0 && !textTools {
		if err := o.tools(req, c.opts.ParallelToolCalls, &c.tools, chatTool, chatForced); err != nil {
			return nil, err
		}
	}
	if out := req.Output; out != nil && o.field("response_format") {
		o.b = append(o.b, `{"type":"json_schema","json_schema":`...)
		o.b = appendOutputFormat(o.b, out, false)
		o.b = append(o.b, '}')
	}
	if n := req.MaxOutputTokens; n > 0 {
		tp := c.opts.TokenParam
		if tp == "" {
			tp = TokenParamFor(model)
		}
		k := "max_tokens"
		if tp == MaxCompletionTokens {
			k = "max_completion_tokens"
		}
		o.int(k, int64(n))
	}
	if err := o.temperature(req.Temperature); err != nil {
		return nil, err
	}
	if e := c.opts.ReasoningEffort; e != "" {
		o.string("reasoning_effort", e)
	}
	if stream && !c.opts.NoStreamUsage {
		o.raw("stream_options", []byte(`{"include_usage":true}`))
	}
	b, err := o.finish(stream)
	if err != nil {
		return nil, err
	}
	c.sizeHint.Store(int64(len(b)))
	return b, nil
}

// chatTool writes one tool of the Chat tools array.
func chatTool(b []byte, s *llm.ToolSpec, params []byte) []byte {
	if s.Builtin != "" {
		// Chat Completions has no provider-defined tools.
		return b
	}
	b = append(b, `{"type":"function","function":{"name":`...)
	b = jsontext.AppendString(b, s.Name)
	if s.Description != "" {
		b = append(b, `,"description":`...)
		b = jsontext.AppendString(b, s.Description)
	}
	b = append(b, `,"parameters":`...)
	b = append(b, params...)
	return append(b, "}}"...)
}

// chatForced writes the tool_choice that forces a call of name.
func chatForced(b []byte, name string) []byte {
	b = append(b, `{"type":"function","function":{"name":`...)
	b = jsontext.AppendString(b, name)
	return append(b, "}}"...)
}

// appendMessages appends the messages array. Adjacent user-role items
// become one user message; reasoning goes back only on the current turn's
// assistant messages that carry calls (DeepSeek's thinking mode refuses a
// tool round without it) and is dropped from earlier turns.
//
// In text tool mode (DESIGN §5.2) the system prompt ends with the tools'
// description, calls go back in the DSML text format inside the assistant
// content, and results go back as user-role text; a run of results and
// the user-role items after it form one user message.
func (c *Chat) appendMessages(b []byte, req *llm.Request, textTools bool) ([]byte, error) {
	b = append(b, '[')
	first := true
	open := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	system := req.System
	if textTools && len(req.Tools) > 0 {
		system = joinText(system, textcall.Instructions(req.Tools))
	}
	if system != "" {
		open()
		b = appendTextMessage(b, "system", system)
	}
	turnStart := currentTurnStart(req)
	var user userText
	flushUser := func() {
		if text, ok := user.take(); ok {
			open()
			b = appendTextMessage(b, "user", text)
		}
	}
	for i, it := range req.All() {
		switch it.Role {
		case llm.RoleUser:
			user.text(it.Text())
		case llm.RoleAssistant:
			flushUser()
			open()
			b = c.msgs.append(b, it, msgKind{assistant: true, current: i >= turnStart, textTools: textTools})
		case llm.RoleTool:
			r := it.Result()
			if r == nil {
				return nil, fmt.Errorf("item %d: tool item without a result", i)
			}
			if textTools {
				user.result(*r)
				continue
			}
			flushUser()
			open()
			b = c.msgs.append(b, it, msgKind{})
		default:
			return nil, fmt.Errorf("item %d: unknown role %q", i, it.Role)
		}
	}
	flushUser()
	return append(b, ']'), nil
}

func appendTextMessage(b []byte, role, text string) []byte {
	b = append(b, `{"role":`...)
	b = jsontext.AppendString(b, role)
	b = append(b, `,"content":`...)
	b = jsontext.AppendString(b, text)
	return append(b, '}')
}

// msgKind is what an item's message depends on besides the item.
type msgKind struct {
	assistant bool // an assistant message; a tool message otherwise
	current   bool // the item belongs to the current turn
	textTools bool
}

// encodeMessage encodes an assistant item or (native mode) a tool item.
func encodeMessage(b []byte, it *llm.Item, k msgKind) []byte {
	if !k.assistant {
		r := it.Result()
		b = append(b, `{"role":"tool","content":`...)
		b = jsontext.AppendString(b, r.Content)
		b = append(b, `,"tool_call_id":`...)
		b = jsontext.AppendString(b, r.CallID)
		return append(b, '}')
	}
	// An assistant item: its calls are written back in the DSML format
	// after its text in text tool mode, as the model writes them.
	var text strings.Builder
	var reasoning map[string]any
	var textCalls []llm.Call
	calls := 0
	for _, p := range it.Parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartCall:
			if p.Call == nil {
				continue
			}
			if k.textTools {
				textCalls = append(textCalls, *p.Call)
				continue
			}
			calls++
		case llm.PartReasoning:
			if p.Opaque == nil || p.Opaque.Provider != ProviderChat || len(p.Opaque.Raw) == 0 {
				continue
			}
			var fields map[string]any
			if json.Unmarshal(p.Opaque.Raw, &fields) == nil {
				if reasoning == nil {
					reasoning = fields
				} else {
					maps.Copy(reasoning, fields)
				}
			}
		}
	}
	content := text.String()
	if len(textCalls) > 0 {
		content = joinText(content, textcall.Format(textCalls))
	}
	if !(k.current && (calls > 0 || len(textCalls) > 0) && len(reasoning) > 0) {
		reasoning = nil
	}
	has := func(k string) bool { _, ok := reasoning[k]; return ok }
	b = append(b, '{')
	if !has("role") {
		b = append(b, `"role":"assistant"`...)
	}
	sep := func(k string) {
		if len(b) > 0 && b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, k)
		b = append(b, ':')
	}
	if (content != "" || calls == 0) && !has("content") {
		sep("content")
		b = jsontext.AppendString(b, content)
	}
	if calls > 0 && !has("tool_calls") {
		sep("tool_calls")
		b = append(b, '[')
		n := 0
		for _, p := range it.Parts {
			if p.Kind != llm.PartCall || p.Call == nil {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"id":`...)
			b = jsontext.AppendString(b, p.Call.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsontext.AppendString(b, p.Call.Name)
			b = append(b, `,"arguments":`...)
			b = jsontext.AppendString(b, argsOrEmpty(p.Call.Args))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	for _, k := range slices.Sorted(maps.Keys(reasoning)) {
		raw, err := extraJSON(reasoning[k])
		if err != nil {
			continue
		}
		sep(k)
		b = append(b, raw...)
	}
	return append(b, '}')
}

// toolsJSON returns the encoded tools array, from the last request's when

// msgCache holds encoded messages by item. An entry is found by the
// address and length of the item's parts and the message kind, and used
// only when the item still holds what it held when it was encoded: the
// entry keeps a snapshot of every field the encoding read (strings, which
// cannot change, and copies of raw bytes), compared on each use. Two
// generations bound its size: when the current one holds msgCacheBytes of
// messages it becomes the old one, and entries found in the old one move
// back.
type msgCache struct {
	mu       sync.Mutex
	cur, old map[msgKey]*msgEntry
	curBytes int
}

// msgCacheBytes is the size of one generation of the message cache.
const msgCacheBytes = 4 << 20

type msgKey struct {
	parts *llm.Part
	n     int
	kind  msgKind
}

type msgEntry struct {
	role  llm.Role
	parts []partSnap
	json  []byte
}

// partSnap is what the encoding of a part may read.
type partSnap struct {
	kind llm.PartKind
	text string
	call bool
	// call id, name and arguments, or result call id and content
	a, b, c    string
	result     bool
	opaque     bool
	provider   string
	opaqueRaw  string
	opaqueNull bool
	// What the Responses encoding also reads: the call's item id, the
	// reasoning's id and encrypted content.
	itemID, opaqueID, encrypted string
}

func snapPart(p *llm.Part) partSnap {
	s := partSnap{kind: p.Kind, text: p.Text}
	if p.Call != nil {
		s.call, s.a, s.b, s.c, s.itemID = true, p.Call.ID, p.Call.Name, p.Call.Args, p.Call.ItemID
	}
	if p.Result != nil {
		// A part holds a call or a result, never both: the fields are
		// shared, with the presence flags telling which.
		s.result, s.a, s.b = true, p.Result.CallID, p.Result.Content
	}
	if p.Opaque != nil {
		s.opaque, s.provider, s.opaqueRaw, s.opaqueNull = true, p.Opaque.Provider, string(p.Opaque.Raw), p.Opaque.Raw == nil
		s.opaqueID, s.encrypted = p.Opaque.ID, p.Opaque.Encrypted
	}
	return s
}

func (s *partSnap) matches(p *llm.Part) bool {
	if p.Kind != s.kind || p.Text != s.text || (p.Call != nil) != s.call || (p.Result != nil) != s.result || (p.Opaque != nil) != s.opaque {
		return false
	}
	if p.Call != nil && p.Result != nil {
		return false // not snapshotted faithfully: never matched
	}
	if p.Call != nil && (p.Call.ID != s.a || p.Call.Name != s.b || p.Call.Args != s.c || p.Call.ItemID != s.itemID) {
		return false
	}
	if p.Result != nil && (p.Result.CallID != s.a || p.Result.Content != s.b) {
		return false
	}
	return p.Opaque == nil || p.Opaque.Provider == s.provider && string(p.Opaque.Raw) == s.opaqueRaw && (p.Opaque.Raw == nil) == s.opaqueNull &&
		p.Opaque.ID == s.opaqueID && p.Opaque.Encrypted == s.encrypted
}

func (e *msgEntry) matches(it *llm.Item) bool {
	if it.Role != e.role || len(it.Parts) != len(e.parts) {
		return false
	}
	for i := range it.Parts {
		if !e.parts[i].matches(&it.Parts[i]) {
			return false
		}
	}
	return true
}

// append appends the message of an item, from the cache when it holds it.
func (mc *msgCache) append(b []byte, it *llm.Item, k msgKind) []byte {
	return mc.appendWith(b, it, k, encodeMessage)
}

// appendWith appends what encode makes of an item, from the cache when it
// holds it. A cache serves one encoder.
func (mc *msgCache) appendWith(b []byte, it *llm.Item, k msgKind, encode func([]byte, *llm.Item, msgKind) []byte) []byte {
	if len(it.Parts) == 0 {
		return encode(b, it, k)
	}
	key := msgKey{parts: &it.Parts[0], n: len(it.Parts), kind: k}
	mc.mu.Lock()
	e, ok := mc.cur[key]
	if !ok {
		if e, ok = mc.old[key]; ok && e.matches(it) {
			mc.putLocked(key, e)
		}
	}
	mc.mu.Unlock()
	if ok && e.matches(it) {
		return append(b, e.json...)
	}
	start := len(b)
	b = encode(b, it, k)
	e = &msgEntry{role: it.Role, parts: make([]partSnap, len(it.Parts)), json: slices.Clone(b[start:])}
	for i := range it.Parts {
		e.parts[i] = snapPart(&it.Parts[i])
	}
	mc.mu.Lock()
	mc.putLocked(key, e)
	mc.mu.Unlock()
	return b
}

func (mc *msgCache) putLocked(key msgKey, e *msgEntry) {
	if mc.cur == nil || mc.curBytes+len(e.json) > msgCacheBytes {
		mc.old, mc.cur, mc.curBytes = mc.cur, make(map[msgKey]*msgEntry), 0
	}
	mc.cur[key] = e
	mc.curBytes += len(e.json)
}
