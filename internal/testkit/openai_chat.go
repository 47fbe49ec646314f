package testkit

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/llm"
)

func chatFinish(r Round) string {
	switch {
	case r.Finish != "":
		return r.Finish
	case len(r.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(r Round) map[string]any {
	in, out := sumUsage(r)
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

// streamChat writes a round as Chat Completions chunks: reasoning_content,
// content, tool_calls fragments keyed by index (id and name on the first
// fragment only), the finish chunk, a usage chunk and [DONE].
func (m *MockServer) streamChat(s *sseWriter, r Round) {
	id := fmt.Sprintf("chatcmpl-mock-%d", m.next)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "model": "mock",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	s.data(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(r.Reasoning, m.ChunkSize) {
		s.data(chunk(map[string]any{"reasoning_content": p}, nil))
	}
	for i, p := range pieces(r.Text, m.ChunkSize) {
		s.data(chunk(map[string]any{"content": p}, nil))
		if i == 0 {
			s.visible()
		}
		if i == 0 && r.Fault == FaultMalformedLine {
			s.raw("data: {\"id\": broken\n\n")
		}
	}
	for i, c := range r.Calls {
		s.data(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": callID(c, m.next, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil))
		s.visible()
		for _, p := range pieces(c.Args, m.ChunkSize) {
			s.data(chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": p},
			}}}, nil))
		}
	}
	if r.Fault == FaultNoTerminal {
		return
	}
	s.data(chunk(map[string]any{}, chatFinish(r)))
	s.data(map[string]any{"id": id, "object": "chat.completion.chunk", "model": "mock", "choices": []any{}, "usage": chatUsage(r)})
	s.raw("data: [DONE]\n\n")
}

func chatBody(r Round, n int) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	var calls []any
	for i, c := range r.Calls {
		calls = append(calls, map[string]any{
			"id": callID(c, n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args},
		})
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-mock-%d", n), "object": "chat.completion", "model": "mock",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatFinish(r)}},
		"usage":   chatUsage(r),
	}
}

// chatWireMessage is a Chat Completions message as the mock servers read it.
type chatWireMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

// decodeChatRequest reads a Chat Completions request back into history
// items, so the invariants can be checked on what went over the wire.
func decodeChatRequest(body []byte) ([]llm.Item, bool, error) {
	var req struct {
		Stream   bool              `json:"stream"`
		Messages []chatWireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, false, fmt.Errorf("decode chat request: %w", err)
	}
	var items []llm.Item
	for i := range req.Messages {
		var err error
		if items, err = appendChatMessage(items, i, &req.Messages[i]); err != nil {
			return nil, req.Stream, err
		}
	}
	return items, req.Stream, nil
}

// appendChatMessage appends the item message i stands for to the history
// decoded so far.
func appendChatMessage(items []llm.Item, i int, m *chatWireMessage) ([]llm.Item, error) {
	text := contentString(m.Content)
	switch m.Role {
	case "system", "developer":
	case "user":
		if len(items) > 0 && items[len(items)-1].Role == llm.RoleUser {
			return nil, fmt.Errorf("message %d: two user messages side by side", i)
		}
		items = append(items, llm.UserText(text))
	case "assistant":
		it := llm.Item{Role: llm.RoleAssistant}
		if text != "" {
			it.Parts = append(it.Parts, llm.Part{Kind: llm.PartText, Text: text})
		}
		for _, tc := range m.ToolCalls {
			it.Parts = append(it.Parts, llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}})
		}
		items = append(items, it)
	case "tool":
		items = append(items, llm.ToolResult(llm.Result{CallID: m.ToolCallID, Content: text}))
	default:
		return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
	}
	return items, nil
}

// contentString reads a content field sent as a string or as text parts.
func contentString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}
