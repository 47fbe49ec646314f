package anthropic

import (
	"bytes"
	"testing"

	"github.com/reinhq/rein/llm"
)

// TestBodiesOfSplitRequestsAreTheSameBytes: a request whose first items
// come as History encodes to the same bytes as the one holding them all in
// Items, wherever the split falls: in the middle of a run of results that
// form one user message, before the calls a request without tools
// declares, with the prompt cache marks and in text tool mode.
func TestBodiesOfSplitRequestsAreTheSameBytes(t *testing.T) {
	items := []llm.Item{
		llm.UserText("Weather in Florence, and 2+3?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			{Kind: llm.PartReasoning, Text: "Two tools.", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "sig-A"}},
			{Kind: llm.PartText, Text: "Checking both."},
			{Kind: llm.PartCall, Call: callWeather},
			{Kind: llm.PartCall, Call: callAdd},
		}},
		llm.ToolResult(llm.Result{CallID: "toolu_1", Name: "weather", Content: "40 C", Status: llm.ResultOK}),
		llm.Directive("Be brief."),
		llm.ToolResult(llm.Result{CallID: "toolu_2", Name: "add", Content: "tool failed: overflow", Status: llm.ResultError}),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "40 C and 5."}}},
		llm.UserText("And tomorrow?"),
	}
	reqs := []llm.Request{
		{Model: "claude-sonnet-4-5", System: "sys", Items: items, Tools: weatherTools, ParallelCalls: true},
		{Model: "claude-sonnet-4-5", Items: items},
	}
	for _, opts := range []Options{{}, {TextTools: true}, {PromptCache: true}} {
		m, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		for ri := range reqs {
			req := &reqs[ri]
			joined, err := m.body(req, true)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k <= len(req.Items); k++ {
				s := *req
				s.History, s.Items = req.Items[:k:k], req.Items[k:]
				got, err := m.body(&s, true)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, joined) {
					t.Fatalf("request %d, options %+v, split at %d:\n%s\nwant\n%s", ri, opts, k, got, joined)
				}
			}
		}
	}
	if !llm.ReadsHistory(&Model{}) {
		t.Error("the Messages adapter does not say it reads History")
	}
}
