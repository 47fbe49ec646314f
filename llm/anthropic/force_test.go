package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/llm"
)

// TestForcedToolChoice: a forced tool (a structured answer's) is
// tool_choice {"type":"tool"}; with extended thinking, which the API allows
// only with auto and none, it is auto.
func TestForcedToolChoice(t *testing.T) {
	req := &llm.Request{Items: []llm.Item{llm.UserText("who?")}, ToolChoice: llm.ToolChoiceRequired, ForceTool: "Person",
		Tools: []llm.ToolSpec{{Name: "Person", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	for _, tc := range []struct {
		budget int
		want   map[string]any
	}{
		{0, map[string]any{"type": "tool", "name": "Person", "disable_parallel_tool_use": true}},
		{2048, map[string]any{"type": "auto", "disable_parallel_tool_use": true}},
	} {
		m, err := New(Options{APIKey: "k", Model: "claude-sonnet-4-5", ThinkingBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.body(req, false)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			ToolChoice map[string]any `json:"tool_choice"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(body.ToolChoice); string(got) != mustJSON(tc.want) {
			t.Errorf("thinking budget %d: tool_choice %s, want %s", tc.budget, got, mustJSON(tc.want))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
