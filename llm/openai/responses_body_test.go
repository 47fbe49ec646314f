package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"

	"github.com/reinhq/rein/llm"
)

// sdkResponsesBody is the body the adapter sent through the SDK: the
// parameters marshalled by the SDK, with "stream": true added.
func (r *Responses) sdkResponsesBody(req *llm.Request, stream bool) (any, error) {
	p, err := r.responsesParams(req)
	if err != nil {
		return nil, err
	}
	raw, err := p.MarshalJSON()
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	if stream {
		v.(map[string]any)["stream"] = true
	}
	return v, nil
}

// compareResponsesBody checks that responsesBody means the same JSON as
// the SDK's encoding.
func compareResponsesBody(r *Responses, req *llm.Request, stream bool) error {
	want, wantErr := r.sdkResponsesBody(req, stream)
	raw, err := r.responsesBody(req, stream)
	if (err != nil) != (wantErr != nil) {
		return fmt.Errorf("error %v, the SDK's %v", err, wantErr)
	}
	if err != nil {
		return nil
	}
	return sameBody(raw, want)
}

func responsesItems(s string) []llm.Item {
	rs := func(text, id, enc, raw string) llm.Part {
		return llm.Part{Kind: llm.PartReasoning, Text: text, Opaque: &llm.Opaque{Provider: ProviderResponses, ID: id, Encrypted: enc, Raw: json.RawMessage(raw)}}
	}
	return []llm.Item{
		llm.UserText("first " + s),
		{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: s}, {Kind: llm.PartText, Text: "two parts"}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			rs("think "+s, "rs_1", "enc-"+s, `{"summary":[{"type":"summary_text","text":"kept"}]}`),
			rs("no raw", "rs_2", "enc2", ""),
			rs("", "", "", `{"x":1}`),
			{Kind: llm.PartReasoning, Text: "chat's", Opaque: &llm.Opaque{Provider: ProviderChat, Raw: json.RawMessage(`{"reasoning_content":"x"}`)}},
			{Kind: llm.PartText, Text: s},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c0", Name: "weather", Args: `{"location":"x"}`, ItemID: "fc_0"}},
			{Kind: llm.PartText, Text: "between"},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c1", Name: "add", Args: " "}},
			{Kind: llm.PartCall},
			rs("after the last output", "rs_3", "enc3", ""),
		}},
		llm.ToolResult(llm.Result{CallID: "c0", Name: "weather", Content: s}),
		llm.ToolResult(llm.Result{CallID: "c1", Name: "add", Content: ""}),
		llm.Directive("steer " + s),
		{Role: llm.RoleAssistant, Parts: []llm.Part{rs("reasoning only", "rs_4", "enc4", "")}},
		llm.UserText("adjacent"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "answer " + s}}},
		{Role: llm.RoleAssistant},
	}
}

func TestResponsesBodyMeansWhatTheSDKSent(t *testing.T) {
	temp, zero := 0.7, 0.0
	schema := json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"the <city> & \u00e9"}},"required":["location"]}`)
	tools := []llm.ToolSpec{
		{Name: "weather", Description: "Get <weather>", Schema: schema},
		{Name: "add", Schema: json.RawMessage(`null`)},
		{Name: "x"},
	}
	optss := []Options{
		{Model: "m"},
		{Model: "gpt-5"},
		{Model: "m", Store: true, ReasoningSummary: "auto"},
		{Model: "o3", ReasoningEffort: "high", ReasoningSummary: "detailed"},
		{Model: "m", ReasoningEffort: "low", Extra: map[string]any{"user": "u", "store": true, "n": 2, "raw": []byte("a<b\"c")}},
		{Model: "m", Extra: map[string]any{"model": "other", "stream": false, "tools": nil, "temperature": 1, "tool_choice": param.Omit, "input": []any{}, "instructions": "x"}},
		{Model: "m", TextTools: true},
		{Model: "m", TextTools: true, Store: true},
	}
	reqs := []func(s string) *llm.Request{
		func(s string) *llm.Request { return &llm.Request{Items: []llm.Item{llm.UserText(s)}} },
		func(s string) *llm.Request {
			return &llm.Request{System: s, Items: responsesItems(s), Tools: tools, ParallelCalls: true, MaxOutputTokens: 100, Temperature: &temp}
		},
		func(s string) *llm.Request {
			return &llm.Request{Model: "gpt-5-mini", Items: responsesItems(s), Tools: tools[:1], ToolChoice: llm.ToolChoiceNone, Temperature: &zero}
		},
		func(s string) *llm.Request {
			return &llm.Request{Items: responsesItems(s), Tools: tools, ToolChoice: llm.ToolChoiceRequired, MaxOutputTokens: 1}
		},
		func(s string) *llm.Request {
			// A structured answer: the format, and a forced tool.
			out := &llm.Output{Name: "Person", Description: s, Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"` + "\\u003c" + `"}},"required":["name"],"additionalProperties":false}`), Strict: true}
			return &llm.Request{Items: responsesItems(s), Tools: tools, ForceTool: "weather", Output: out}
		},
		func(s string) *llm.Request {
			out := &llm.Output{Name: "n", Schema: json.RawMessage(" {\n \"type\": \"object\"}")}
			return &llm.Request{Items: []llm.Item{llm.UserText(s)}, Output: out}
		},
	}
	for oi, opts := range optss {
		r := NewResponses(opts)
		for ri, mk := range reqs {
			for si, s := range awkward {
				for _, stream := range []bool{true, false} {
					// Twice: the second time from the cache.
					for pass := range 2 {
						if err := compareResponsesBody(r, mk(s), stream); err != nil {
							t.Fatalf("options %d, request %d, string %d, stream %v, pass %d: %v", oi, ri, si, stream, pass, err)
						}
					}
				}
			}
		}
	}
}

// TestResponsesBodyCacheSeesChangedItems: an item changed in place (a
// pause answer written over its placeholder, a reasoning part's id) is
// encoded again, not served from the cache.
func TestResponsesBodyCacheSeesChangedItems(t *testing.T) {
	r := NewResponses(Options{Model: "m", Store: true})
	items := responsesItems("x")
	req := &llm.Request{Items: items}
	if err := compareResponsesBody(r, req, true); err != nil {
		t.Fatal(err)
	}
	items[2].Parts[0].Opaque.ID = "rs_changed"
	items[2].Parts[5].Call.ItemID = "fc_changed"
	items[3].Parts[0].Result.Content = "answered"
	body, err := r.responsesBody(req, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rs_changed", "fc_changed", "answered"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the body lacks %q: the cache served a stale item", want)
		}
	}
	if err := compareResponsesBody(r, req, true); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkResponsesBody encodes the request of round 50 of a turn (49
// rounds of a call and its result before it), as each round does: with the
// adapter's encoder (its cache warm from the round before) and with the
// SDK's reflection, the encoder it replaced.
func BenchmarkResponsesBody(b *testing.B) {
	items := []llm.Item{llm.UserText("go")}
	for i := range 49 {
		id := fmt.Sprintf("call_%d", i)
		items = append(items,
			llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "noop", Args: `{"n":1}`}}}},
			llm.ToolResult(llm.Result{CallID: id, Name: "noop", Content: strings.Repeat("result text ", 20)}))
	}
	tools := []llm.ToolSpec{{Name: "noop", Description: "Do nothing.", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}}
	req := &llm.Request{System: "You are terse.", Items: items, Tools: tools}
	b.Run("rein", func(b *testing.B) {
		r := NewResponses(Options{Model: "m"})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.responsesBody(req, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		r := NewResponses(Options{Model: "m"})
		b.ReportAllocs()
		for b.Loop() {
			p, err := r.responsesParams(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
