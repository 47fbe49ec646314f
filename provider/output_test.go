package provider

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
)

// TestOutputModeFollowsTheConfig: output_mode chooses how a structured
// answer is asked for; DeepSeek's API, which has no JSON Schema format,
// gets a forced tool by default; a wrong value or protocol is refused.
func TestOutputModeFollowsTheConfig(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		spec       Spec
		want       llm.OutputMode
	}{
		{"responses by default", "", Spec{"openai", "gpt-5"}, llm.OutputNative},
		{"chat by default", "", Spec{"openai-chat", "gpt-5"}, llm.OutputNative},
		{"deepseek by default", "", Spec{"deepseek", "deepseek-chat"}, llm.OutputTool},
		{"anthropic", "", Spec{"anthropic", "claude-sonnet-4-5"}, llm.OutputTool},
		{"a compatible server told so", "[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\noutput_mode = \"tool\"\n", Spec{"local", "m"}, llm.OutputTool},
		{"deepseek told otherwise", "[models.\"deepseek:*\"]\noutput_mode = \"native\"\n", Spec{"deepseek", "deepseek-chat"}, llm.OutputNative},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Open(tt.spec, Config{Getenv: env(map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}), File: mustParse(t, tt.file)})
			if err != nil {
				t.Fatal(err)
			}
			if got := llm.OutputModeOf(m); got != tt.want {
				t.Errorf("output mode %q, want %q", got, tt.want)
			}
		})
	}
	for _, bad := range []string{
		"[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \"http://x/v1\"\noutput_mode = \"json\"\n",
		"[providers.local]\nprotocol = \"anthropic\"\nbase_url = \"http://x\"\noutput_mode = \"tool\"\n",
	} {
		f, err := config.Parse(bad)
		if err == nil {
			_, err = Open(Spec{"local", "m"}, Config{Getenv: env(nil), File: f})
		}
		if err == nil || !strings.Contains(err.Error(), "output_mode") {
			t.Errorf("%q: err %v, want one naming output_mode", bad, err)
		}
	}
}
