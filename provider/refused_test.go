package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// TestRefusedToolsAreRemembered: after an Ollama-style refusal of tool
// definitions, the model warns once and goes on in text tool mode, and a
// model of the same server opened later (another thread of rein serve)
// starts in text tool mode: the server is not refused again.
func TestRefusedToolsAreRemembered(t *testing.T) {
	srv := testkit.NewChatServer(t,
		testkit.Round{Fault: testkit.FaultToolsRefusedInProse},
		testkit.Round{Text: "first"},
		testkit.Round{Text: "second"},
	)
	f := mustParse(t, `
[providers.ollama]
protocol = "openai-chat"
base_url = "`+srv.BaseURL()+`"
`)
	var warnings []string
	c := Config{Getenv: env(nil), File: f, Warn: func(msg string) { warnings = append(warnings, msg) }}
	req := func() *llm.Request {
		return &llm.Request{Items: []llm.Item{llm.UserText("hi")}, Tools: []llm.ToolSpec{{Name: "weather", Schema: json.RawMessage(`{"type":"object"}`)}}}
	}
	ask := func(m llm.Model) string {
		t.Helper()
		s, err := m.Stream(context.Background(), req())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Collect(s)
		if err != nil {
			t.Fatal(err)
		}
		return (&llm.Item{Parts: resp.Parts}).Text()
	}

	r, err := Resolve(Spec{"ollama", "gemma3:4b"}, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.ToolMode != config.ToolModeNative {
		t.Fatalf("tool mode %s before any refusal", r.ToolMode)
	}
	if got := ask(r.Model); got != "first" {
		t.Fatalf("answer %q", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "text tool mode") || !strings.Contains(warnings[0], `tool_mode = "text"`) {
		t.Errorf("warnings %q, want one that names the switch and the setting", warnings)
	}

	r, err = Resolve(Spec{"ollama", "gemma3:4b"}, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.ToolMode != config.ToolModeText || r.Caps.NativeTools {
		t.Errorf("a later model of the server: tool mode %s, native tools %v", r.ToolMode, r.Caps.NativeTools)
	}
	if got := ask(r.Model); got != "second" {
		t.Fatalf("answer %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (refused, sent again, the later model's)", len(reqs))
	}
	for i, q := range reqs[1:] {
		var b map[string]any
		json.Unmarshal(q.Body, &b)
		if b["tools"] != nil {
			t.Errorf("request %d offered native tools after the refusal", i+2)
		}
	}
	if len(warnings) != 1 {
		t.Errorf("warned %d times, want once", len(warnings))
	}
}
