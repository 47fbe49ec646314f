package openai

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3/packages/param"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/jsontext"
	"github.com/reinhq/rein/llm/textcall"
)

// object writes a request body, Chat's or Responses': a JSON object whose
// fields the configuration's extra fields (Options.Extra) replace, as the
// SDK's extra fields did. Fields are written in the order they come, the
// extra fields last in key order.
type object struct {
	b     []byte
	extra map[string]any
}

// newObject starts a body; hint is the size of the last one.
func newObject(hint int64, extra map[string]any) *object {
	o := &object{b: make([]byte, 0, hint+hint/8+512), extra: extra}
	o.b = append(o.b, '{')
	return o
}

// replaced reports whether an extra field replaces the field k.
func (o *object) replaced(k string) bool {
	_, ok := o.extra[k]
	return ok
}

// field starts the field k, unless an extra field replaces it; it reports
// whether the caller is to write the value.
func (o *object) field(k string) bool {
	if o.replaced(k) {
		return false
	}
	o.key(k)
	return true
}

func (o *object) key(k string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = jsontext.AppendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *object) string(k, v string) {
	if o.field(k) {
		o.b = jsontext.AppendString(o.b, v)
	}
}

func (o *object) raw(k string, v []byte) {
	if o.field(k) {
		o.b = append(o.b, v...)
	}
}

func (o *object) int(k string, n int64) {
	if o.field(k) {
		o.b = strconv.AppendInt(o.b, n, 10)
	}
}

// tools writes the request's tools (each as write shapes it), tool choice
// and parallel calls: parallel, when set (Options.ParallelToolCalls), wins
// over the request's. "none" keeps the definitions: the prompt cache stays
// warm and servers that want definitions beside earlier calls are
// satisfied.
//
// A forced tool (llm.Request.ForceTool) is written by force, in its
// protocol's shape.
func (o *object) tools(req *llm.Request, parallel *bool, cache *atomic.Pointer[toolsCache], write func(b []byte, s *llm.ToolSpec, params []byte) []byte, force func(b []byte, name string) []byte) error {
	if !o.replaced("tools") {
		tools, err := toolsJSON(cache, req.Tools, write)
		if err != nil {
			return err
		}
		o.raw("tools", tools)
	}
	choice := req.ToolChoice
	if choice == "" {
		choice = llm.ToolChoiceAuto
	}
	if req.ForceTool != "" {
		if o.field("tool_choice") {
			o.b = force(o.b, req.ForceTool)
		}
	} else {
		o.string("tool_choice", string(choice))
	}
	switch {
	case parallel != nil && !*parallel:
		o.raw("parallel_tool_calls", []byte("false"))
	case parallel != nil || req.ParallelCalls:
		o.raw("parallel_tool_calls", []byte("true"))
	}
	return nil
}

// appendOutputFormat appends the json_schema format of a structured
// answer: Chat's response_format.json_schema, or (flat, with the type)
// Responses' text.format. The schema goes as given; strict is sent only
// when the output asks for it, since strict schemas must list every
// property as required.
func appendOutputFormat(b []byte, out *llm.Output, flat bool) []byte {
	b = append(b, '{')
	if flat {
		b = append(b, `"type":"json_schema",`...)
	}
	b = append(b, `"name":`...)
	b = jsontext.AppendString(b, out.Name)
	if out.Description != "" {
		b = append(b, `,"description":`...)
		b = jsontext.AppendString(b, out.Description)
	}
	b = append(b, `,"schema":`...)
	b = append(b, compactJSON(string(out.Schema))...)
	b = append(b, `,"strict":`...)
	b = strconv.AppendBool(b, out.Strict)
	return append(b, '}')
}

// temperature writes the temperature when the request sets one.
func (o *object) temperature(t *float64) error {
	if t == nil || o.replaced("temperature") {
		return nil
	}
	raw, err := json.Marshal(*t)
	if err != nil {
		return fmt.Errorf("temperature: %w", err)
	}
	o.raw("temperature", raw)
	return nil
}

// finish writes the extra fields and "stream" and closes the object.
func (o *object) finish(stream bool) ([]byte, error) {
	for _, k := range slices.Sorted(maps.Keys(o.extra)) {
		if stream && k == "stream" {
			continue
		}
		v := o.extra[k]
		if any(v) == any(param.Omit) {
			continue
		}
		raw, err := extraJSON(v)
		if err != nil {
			return nil, fmt.Errorf("extra field %q: %w", k, err)
		}
		o.key(k)
		o.b = append(o.b, raw...)
	}
	if stream {
		o.key("stream")
		o.b = append(o.b, "true"...)
	}
	return append(o.b, '}'), nil
}

// extraJSON encodes an extra field's value as the SDK does: a byte slice is
// a string, anything else as encoding/json writes it.
func extraJSON(v any) ([]byte, error) {
	if s, ok := v.([]byte); ok {
		return jsontext.AppendString(nil, string(s)), nil
	}
	return json.Marshal(v)
}

// toolsJSON encodes a tools array, each tool as write shapes it with its
// parameters' JSON, reusing the cache's array when the tools did not
// change.
func toolsJSON(cache *atomic.Pointer[toolsCache], specs []llm.ToolSpec, write func(b []byte, s *llm.ToolSpec, params []byte) []byte) ([]byte, error) {
	if t := cache.Load(); t != nil && t.same(specs) {
		return t.json, nil
	}
	b := []byte{'['}
	written := 0
	for i := range specs {
		s := &specs[i]
		var params []byte
		if s.Builtin == "" {
			schema, err := schemaMap(s.Schema)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", s.Name, err)
			}
			if params, err = json.Marshal(schema); err != nil {
				return nil, fmt.Errorf("tool %q: schema: %w", s.Name, err)
			}
		}
		// write leaves out a builtin its API has not.
		mark := len(b)
		if written > 0 {
			b = append(b, ',')
		}
		before := len(b)
		if b = write(b, s, params); len(b) == before {
			b = b[:mark]
			continue
		}
		written++
	}
	b = append(b, ']')
	t := &toolsCache{json: b, specs: make([]toolSnap, len(specs))}
	for i, s := range specs {
		t.specs[i] = toolSnap{s.Name, s.Description, string(s.Schema), s.Builtin}
	}
	cache.Store(t)
	return b, nil
}

// userText gathers what goes as one user message: adjacent user-role
// items, and in text tool mode the results before them, written as text.
type userText struct {
	parts   []string
	results []llm.Result
}

func (u *userText) text(s string) {
	u.flushResults()
	u.parts = append(u.parts, s)
}

func (u *userText) result(r llm.Result) { u.results = append(u.results, r) }

func (u *userText) flushResults() {
	if len(u.results) > 0 {
		u.parts = append(u.parts, textcall.FormatResults(u.results))
		u.results = u.results[:0]
	}
}

// take returns the message's text and empties u; ok is false when there is
// none.
func (u *userText) take() (text string, ok bool) {
	u.flushResults()
	if len(u.parts) == 0 {
		return "", false
	}
	text = strings.Join(u.parts, "\n\n")
	u.parts = u.parts[:0]
	return text, true
}

// toolsCache is the last tools array encoded.
type toolsCache struct {
	specs []toolSnap
	json  []byte
}

type toolSnap struct {
	name, description, schema string
	builtin                   llm.Builtin
}

func (t *toolsCache) same(specs []llm.ToolSpec) bool {
	if len(specs) != len(t.specs) {
		return false
	}
	for i := range specs {
		s := &t.specs[i]
		if specs[i].Name != s.name || specs[i].Description != s.description || string(specs[i].Schema) != s.schema || specs[i].Builtin != s.builtin {
			return false
		}
	}
	return true
}
