package provider

import "testing"

// TestWebSearchCapability checks which models get the provider's own
// search: the vendor's models through the vendor's protocol, not through
// Chat Completions nor in text tool mode, and as a config says.
func TestWebSearchCapability(t *testing.T) {
	keys := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}
	for _, tc := range []struct {
		name string
		spec Spec
		conf string
		want bool
	}{
		{"openai responses", Spec{"openai", "gpt-5-mini"}, "", true},
		{"anthropic", Spec{"anthropic", "claude-sonnet-4-5"}, "", true},
		{"openai over chat", Spec{"openai-chat", "gpt-5"}, "", false},
		{"deepseek", Spec{"deepseek", "deepseek-chat"}, "", false},
		{"unknown model", Spec{"openai", "gpt-9"}, "", false},
		{"configured provider", Spec{"p", "m"}, "[providers.p]\nprotocol = \"anthropic\"\nbase_url = \"http://127.0.0.1:1\"\n", false},
		{"a config switches it on", Spec{"p", "m"}, "[providers.p]\nprotocol = \"openai\"\nbase_url = \"http://127.0.0.1:1\"\n[providers.p.capabilities]\nweb_search = true\n", true},
		{"a config switches it off", Spec{"openai", "gpt-5"}, "[models.\"openai:gpt-5\"]\nweb_search = false\n", false},
		{"text tool mode", Spec{"p", "claude-sonnet-4-5"}, "[providers.p]\nprotocol = \"anthropic\"\nbase_url = \"http://127.0.0.1:1\"\ntool_mode = \"text\"\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Resolve(tc.spec, Config{Getenv: env(keys), File: mustParse(t, tc.conf)})
			if err != nil {
				t.Fatal(err)
			}
			if r.Caps.WebSearch != tc.want {
				t.Errorf("web search %v, want %v", r.Caps.WebSearch, tc.want)
			}
		})
	}
}
