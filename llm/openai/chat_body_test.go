package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/packages/param"

	"github.com/reinhq/rein/llm"
)

// sdkChatBody is the body the adapter sent through the SDK: the parameters
// marshalled by the SDK, with "stream": true set as option.WithJSONSet did.
func (c *Chat) sdkChatBody(req *llm.Request, stream, textTools bool) (any, error) {
	p, err := c.sdkChatParams(req, stream, textTools)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(p)
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

func decodeJSON(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("data after the value")
	}
	return v, nil
}

// checkNoDuplicateKeys fails on an object with a key twice, which decoding
// into a map would hide.
func checkNoDuplicateKeys(raw []byte) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	var walk func() error
	walk = func() error {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("key %q twice", k)
				}
				seen[k.(string)] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		case json.Delim('['):
			for d.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		}
		return nil
	}
	return walk()
}

// compareChatBody checks that chatBody means the same JSON as the SDK's
// encoding of the same request, or fails the same way.
func compareChatBody(c *Chat, req *llm.Request, stream, textTools bool) error {
	want, wantErr := c.sdkChatBody(req, stream, textTools)
	raw, err := c.chatBody(req, stream, textTools)
	if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
		return fmt.Errorf("error %v, the SDK's %v", err, wantErr)
	}
	if err != nil {
		return nil
	}
	return sameBody(raw, want)
}

// sameBody checks that an encoded body is valid UTF-8 without a key twice
// and decodes to want, the SDK's encoding decoded.
func sameBody(raw []byte, want any) error {
	if !utf8.Valid(raw) {
		return fmt.Errorf("body %q is not valid UTF-8", raw)
	}
	if err := checkNoDuplicateKeys(raw); err != nil {
		return fmt.Errorf("body %s: %v", raw, err)
	}
	got, err := decodeJSON(raw)
	if err != nil {
		return fmt.Errorf("body %s: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		w, _ := json.Marshal(want)
		return fmt.Errorf("body\n %s\nthe SDK's\n %s", raw, w)
	}
	return nil
}

// Strings that JSON encoders treat differently.
var awkward = []string{
	"", "plain", "quote \" backslash \\ slash /", "line\nfeed\r\ttab", "ctl \x00\x01\x1f\x7f",
	"bad utf-8 \xff\xfe\xc3", "sep \u2028 \u2029", "html <a href=\"x\">&amp;</a>", "ünïcödé 日本 😀",
	"<｜DSML｜tool_calls>", strings.Repeat("long ", 200),
}

func chatItems(s string, turn string) []llm.Item {
	reasoning := func(raw string) llm.Part {
		return llm.Part{Kind: llm.PartReasoning, Text: "thinking", Opaque: &llm.Opaque{Provider: ProviderChat, Raw: json.RawMessage(raw)}}
	}
	return []llm.Item{
		{Role: llm.RoleUser, Origin: llm.OriginInput, TurnID: "t0", Parts: []llm.Part{{Kind: llm.PartText, Text: "first " + s}}},
		{Role: llm.RoleAssistant, TurnID: "t0", Parts: []llm.Part{
			reasoning(`{"reasoning_content":"old"}`),
			{Kind: llm.PartText, Text: s},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c0", Name: "weather", Args: `{"location":"` + strings.ReplaceAll(s, `"`, "") + `"}`}},
		}},
		llm.ToolResult(llm.Result{CallID: "c0", Name: "weather", Content: s}),
		{Role: llm.RoleAssistant, TurnID: "t0", Parts: []llm.Part{{Kind: llm.PartText, Text: "answer " + s}}},
		{Role: llm.RoleUser, Origin: llm.OriginInput, TurnID: turn, Parts: []llm.Part{{Kind: llm.PartText, Text: s}, {Kind: llm.PartText, Text: "two parts"}}},
		{Role: llm.RoleUser, TurnID: turn, Parts: []llm.Part{{Kind: llm.PartText, Text: "adjacent"}}},
		{Role: llm.RoleAssistant, TurnID: turn, Parts: []llm.Part{
			reasoning(`{"reasoning_content":"now ` + strings.ReplaceAll(strings.ToValidUTF8(s, ""), `"`, "") + `","n":12345678901234567890}`),
			reasoning(`{"reasoning_details":[{"type":"text","text":"x"}],"reasoning_content":"later"}`),
			{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: ProviderResponses, Raw: json.RawMessage(`{"x":1}`)}},
			{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: ProviderChat, Raw: json.RawMessage(`not json`)}},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c1", Name: "add", Args: ""}},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c2", Name: "add", Args: " \n"}},
			{Kind: llm.PartCall},
		}},
		llm.ToolResult(llm.Result{CallID: "c1", Name: "add", Content: ""}),
		llm.ToolResult(llm.Result{CallID: "c2", Name: "add", Content: "5"}),
		{Role: llm.RoleUser, TurnID: turn, Parts: []llm.Part{{Kind: llm.PartText, Text: "steer"}}},
		{Role: llm.RoleAssistant, TurnID: turn, Parts: []llm.Part{
			reasoning(`{"content":"replaced by reasoning","role":"assistant"}`),
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c3", Name: "x", Args: "{}"}},
		}},
		llm.ToolResult(llm.Result{CallID: "c3", Content: "r"}),
		{Role: llm.RoleAssistant, TurnID: turn},
	}
}

func TestChatBodyMeansWhatTheSDKSent(t *testing.T) {
	temp, zero := 0.7, 0.0
	schema := json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"the <city> & \u00e9"}},"required":["location"]}`)
	tools := []llm.ToolSpec{
		{Name: "weather", Description: "Get <weather>", Schema: schema},
		{Name: "add", Schema: json.RawMessage(`null`)},
		{Name: "x"},
	}
	optss := []Options{
		{Model: "m"},
		{Model: "gpt-5", NoStreamUsage: true, ReasoningEffort: "high"},
		{Model: "m", TokenParam: MaxCompletionTokens, Extra: map[string]any{"reasoning": map[string]any{"effort": "low"}, "usage": map[string]any{"include": true}, "n": 2}},
		{Model: "m", Extra: map[string]any{"model": "other", "stream": false, "tools": nil, "temperature": 1, "raw": []byte("a<b\"c"), "tool_choice": param.Omit}},
		{Model: "m", Extra: map[string]any{"messages": []any{}, "stream_options": map[string]any{"include_usage": false}, "max_tokens": 9}},
	}
	reqs := []func(s string) *llm.Request{
		func(s string) *llm.Request { return &llm.Request{Items: []llm.Item{llm.UserText(s)}} },
		func(s string) *llm.Request {
			return &llm.Request{System: s, Model: "o3-mini", Items: chatItems(s, "t1"), TurnID: "t1", Tools: tools, ParallelCalls: true, MaxOutputTokens: 100, Temperature: &temp}
		},
		func(s string) *llm.Request {
			// No turn ids: the current turn starts at the last input.
			items := chatItems(s, "")
			for i := range items {
				items[i].TurnID = ""
			}
			return &llm.Request{Items: items, Tools: tools, ToolChoice: llm.ToolChoiceNone, Temperature: &zero}
		},
		func(s string) *llm.Request {
			return &llm.Request{Items: chatItems(s, "t1"), TurnID: "t9", Tools: tools[:1], ToolChoice: "required", MaxOutputTokens: 1}
		},
		func(s string) *llm.Request {
			// A structured answer: the format, and a forced tool.
			out := &llm.Output{Name: "Person", Description: s, Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"` + "\\u003c" + `"}},"required":["name"],"additionalProperties":false}`), Strict: true}
			return &llm.Request{Items: chatItems(s, "t1"), TurnID: "t1", Tools: tools, ForceTool: "weather", Output: out}
		},
		func(s string) *llm.Request {
			out := &llm.Output{Name: "n", Schema: json.RawMessage(" {\n \"type\": \"object\"}")}
			return &llm.Request{Items: []llm.Item{llm.UserText(s)}, Output: out}
		},
	}
	for oi, opts := range optss {
		c := NewChat(opts)
		for ri, mk := range reqs {
			for si, s := range awkward {
				for _, stream := range []bool{true, false} {
					for _, text := range []bool{false, true} {
						// Twice: encoded, then from the cache.
						for pass := range 2 {
							if err := compareChatBody(c, mk(s), stream, text); err != nil {
								t.Fatalf("options %d, request %d, string %d, stream %v, text %v, pass %d: %v", oi, ri, si, stream, text, pass, err)
							}
						}
					}
				}
			}
		}
	}
}

func TestChatBodyErrorsAsTheSDKPath(t *testing.T) {
	c := NewChat(Options{Model: "m"})
	for _, req := range []*llm.Request{
		{Items: []llm.Item{{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartText, Text: "no result"}}}}},
		{Items: []llm.Item{{Role: llm.Role(200)}}}, // a role without a name
		{Items: []llm.Item{llm.UserText("hi")}, Tools: []llm.ToolSpec{{Name: "bad", Schema: json.RawMessage(`[1,2]`)}}},
		{Items: []llm.Item{llm.UserText("hi")}, Tools: []llm.ToolSpec{{Name: "bad", Schema: json.RawMessage(`{`)}}},
	} {
		if _, err := c.chatBody(req, true, false); err == nil {
			t.Errorf("request %+v: no error", req)
		}
		if err := compareChatBody(c, req, true, false); err != nil {
			t.Error(err)
		}
	}
}

// TestChatBodyCacheSeesChangedItems changes items in every way a history
// changes (a pause answer written over its placeholder, a part replaced, raw
// reasoning rewritten in place, a compacted history, a new turn) and checks
// each body against the SDK's with the cache warm.
func TestChatBodyCacheSeesChangedItems(t *testing.T) {
	c := NewChat(Options{Model: "m"})
	tools := []llm.ToolSpec{{Name: "weather", Schema: json.RawMessage(`{"type":"object"}`)}}
	items := chatItems("s", "t1")
	req := &llm.Request{Items: items, TurnID: "t1", Tools: tools}
	check := func(what string) {
		t.Helper()
		for _, text := range []bool{false, true} {
			if err := compareChatBody(c, req, true, text); err != nil {
				t.Fatalf("%s (text mode %v): %v", what, text, err)
			}
		}
	}
	check("first")
	check("again")
	entries := len(c.msgs.cur)
	check("third time")
	if len(c.msgs.cur) != entries {
		t.Errorf("an unchanged history added %d cache entries", len(c.msgs.cur)-entries)
	}

	items[2].Parts[0].Result.Content = "the pause answer, written in place"
	check("result content changed in place")
	items[7].Parts[0] = llm.Part{Kind: llm.PartResult, Result: &llm.Result{CallID: "c1", Content: "replaced part"}}
	check("result part replaced")
	items[6].Parts[0].Opaque.Raw[len(`{"reasoning_content":"`)] = 'N'
	check("raw reasoning rewritten in place")
	items[1].Parts[2].Call.Args = `{"location":"Rome"}`
	check("call arguments changed")
	items[3].Parts[0].Text = "changed answer"
	check("text changed")
	items[1].Role = llm.RoleUser
	items[1].Parts = items[1].Parts[1:2]
	check("item rewritten over its parts")
	items[1].Role = llm.RoleAssistant
	check("role back")

	tools[0].Schema[len(`{"type":"`)] = 'O'
	check("schema rewritten in place")
	tools[0].Description = "now described"
	check("description changed")

	req.TurnID = "t2"
	check("a new turn: reasoning no longer sent")
	req.Items = append([]llm.Item{llm.UserText("summary of the conversation")}, items[4:]...)
	check("compacted")
	req.Items = append(req.Items[:len(req.Items):len(req.Items)], llm.UserText("next"))
	check("appended")
}

// TestChatBodyCacheStaysBounded fills the cache past two generations.
func TestChatBodyCacheStaysBounded(t *testing.T) {
	c := NewChat(Options{Model: "m"})
	big := strings.Repeat("x", 64<<10)
	var items []llm.Item
	for i := range 3 * msgCacheBytes / len(big) {
		id := fmt.Sprint("c", i)
		items = append(items, llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "n", Args: "{}"}}}},
			llm.ToolResult(llm.Result{CallID: id, Content: big}))
	}
	req := &llm.Request{Items: items}
	if err := compareChatBody(c, req, true, false); err != nil {
		t.Fatal(err)
	}
	if err := compareChatBody(c, req, true, false); err != nil {
		t.Fatal(err)
	}
	if c.msgs.curBytes > msgCacheBytes {
		t.Errorf("current generation holds %d bytes", c.msgs.curBytes)
	}
}
