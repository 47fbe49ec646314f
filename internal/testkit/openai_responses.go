package testkit

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/llm"
)

// responsesOutput builds the output items of a round: reasoning (with
// encrypted content), message, function calls.
func responsesOutput(r Round, n int) []map[string]any {
	var out []map[string]any
	if r.Reasoning != "" {
		out = append(out, map[string]any{
			"type": "reasoning", "id": fmt.Sprintf("rs_mock_%d", n),
			"summary":           []any{map[string]any{"type": "summary_text", "text": r.Reasoning}},
			"encrypted_content": fmt.Sprintf("enc-%d", n),
		})
	}
	if r.Text != "" {
		out = append(out, map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_mock_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}},
		})
	}
	for i, c := range r.Calls {
		out = append(out, map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_mock_%d_%d", n, i), "status": "completed",
			"call_id": callID(c, n, i), "name": c.Name, "arguments": c.Args,
		})
	}
	return out
}

func responsesBody(r Round, n int) map[string]any {
	in, out := sumUsage(r)
	resp := map[string]any{
		"id": fmt.Sprintf("resp_mock_%d", n), "object": "response", "model": "mock", "status": "completed",
		"output": responsesOutput(r, n),
		"usage": map[string]any{
			"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
			"input_tokens_details":  map[string]any{"cached_tokens": 0},
			"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	}
	if r.Finish != "" {
		resp["status"] = "incomplete"
		resp["incomplete_details"] = map[string]any{"reason": r.Finish}
	}
	return resp
}

// streamResponses writes a round as Responses API events, ending with
// response.completed (or response.incomplete).
func (m *MockServer) streamResponses(s *sseWriter, r Round) {
	n := m.next
	body := responsesBody(r, n)
	s.event("response.created", map[string]any{"response": map[string]any{"id": body["id"], "model": "mock", "status": "in_progress", "output": []any{}}})
	for i, item := range responsesOutput(r, n) {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		switch item["type"] {
		case "reasoning":
			s.event("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "reasoning", "id": item["id"], "summary": []any{}}})
			for _, p := range pieces(r.Reasoning, m.ChunkSize) {
				s.event("response.reasoning_summary_text.delta", map[string]any{"output_index": i, "item_id": item["id"], "summary_index": 0, "delta": p})
			}
		case "message":
			added["content"] = []any{}
			s.event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for j, p := range pieces(r.Text, m.ChunkSize) {
				s.event("response.output_text.delta", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "delta": p})
				if j == 0 {
					s.visible()
				}
				if j == 0 && r.Fault == FaultMalformedLine {
					s.raw("event: response.output_text.delta\ndata: {broken\n\n")
				}
			}
		case "function_call":
			added["arguments"] = ""
			s.event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			s.visible()
			for _, p := range pieces(item["arguments"].(string), m.ChunkSize) {
				s.event("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": item["id"], "delta": p})
			}
		}
		s.event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	if r.Fault == FaultNoTerminal {
		return
	}
	typ := "response.completed"
	if body["status"] == "incomplete" {
		typ = "response.incomplete"
	}
	s.event(typ, map[string]any{"response": body})
}

// decodeResponsesRequest reads a Responses request back into history
// items: consecutive reasoning, assistant message and function_call items
// form one assistant item.
func decodeResponsesRequest(body []byte) ([]llm.Item, bool, error) {
	var req struct {
		Stream bool `json:"stream"`
		Input  []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Output    json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, false, fmt.Errorf("decode responses request: %w", err)
	}
	var items []llm.Item
	assistant := func() *llm.Item {
		if len(items) == 0 || items[len(items)-1].Role != llm.RoleAssistant {
			items = append(items, llm.Item{Role: llm.RoleAssistant})
		}
		return &items[len(items)-1]
	}
	for i, in := range req.Input {
		switch {
		case in.Type == "function_call":
			a := assistant()
			a.Parts = append(a.Parts, llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: in.CallID, Name: in.Name, Args: in.Arguments}})
		case in.Type == "function_call_output":
			items = append(items, llm.ToolResult(llm.Result{CallID: in.CallID, Content: contentString(in.Output)}))
		case in.Type == "reasoning":
			a := assistant()
			a.Parts = append(a.Parts, llm.Part{Kind: llm.PartReasoning})
		case in.Role == "assistant":
			a := assistant()
			a.Parts = append(a.Parts, llm.Part{Kind: llm.PartText, Text: contentString(in.Content)})
		case in.Role == "user":
			if len(items) > 0 && items[len(items)-1].Role == llm.RoleUser {
				return nil, req.Stream, fmt.Errorf("input %d: two user messages side by side", i)
			}
			items = append(items, llm.UserText(contentString(in.Content)))
		case in.Role == "system" || in.Role == "developer":
		default:
			return nil, req.Stream, fmt.Errorf("input %d: unknown item %q/%q", i, in.Type, in.Role)
		}
	}
	return items, req.Stream, nil
}
