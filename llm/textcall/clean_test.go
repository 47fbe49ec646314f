package textcall

import (
	"testing"

	"github.com/reinhq/rein/llm/think"
)

// TestClean: content is cleaned as Parse cleans it (exampleC keeps the two
// spaces around its markup), reasoning is kept as written.
func TestClean(t *testing.T) {
	tests := []struct {
		name, in, want string
		think          think.Options
	}{
		{"no reasoning: Parse's visible text", exampleA, "Let me check two sources.", think.Options{}},
		{"reasoning kept, tags and all", "<think>which source?</think>\n" + exampleA, "<think>which source?</think>Let me check two sources.", think.Options{}},
		{"markup in reasoning is reasoning", "<think>maybe " + block(fw, "tool_calls", "exec", "") + "</think>" + exampleC,
			"<think>maybe " + block(fw, "tool_calls", "exec", "") + "</think>Great job!  Choose what to study next.", think.Options{}},
		{"reasoning between two runs of content", "Asking.<think>hm</think>" + exampleC, "Asking.<think>hm</think>Great job!  Choose what to study next.", think.Options{}},
		{"started inside", "plan</think>" + exampleA, "plan</think>Let me check two sources.", think.Options{StartInside: true}},
		{"plain text", "  just text ", "just text", think.Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.in, Options{Catalog: testCatalog, Think: tt.think}); got != tt.want {
				t.Errorf("Clean = %q, want %q", got, tt.want)
			}
		})
	}
}
