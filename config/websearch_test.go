package config

import (
	"strings"
	"testing"
)

func TestWebSearch(t *testing.T) {
	tests := []struct {
		name, text string
		want       WebSearch
		err        string
	}{
		{"none", "", WebSearch{}, ""},
		{"searxng", "[web_search]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:8888\"\n", WebSearch{Backend: "searxng", URL: "http://127.0.0.1:8888"}, ""},
		{"brave with key_env", "[web_search]\nbackend = \"brave\"\nkey_env = \"MY_BRAVE\"\n", WebSearch{Backend: "brave", KeyEnv: "MY_BRAVE"}, ""},
		{"tavily endpoint", "[web_search]\nbackend = \"tavily\"\nurl = \"https://proxy.example/search\"\n", WebSearch{Backend: "tavily", URL: "https://proxy.example/search"}, ""},
		{"unknown backend", "[web_search]\nbackend = \"google\"\n", WebSearch{}, `web_search: backend "google": use one of searxng, brave, tavily`},
		{"no backend", "[web_search]\nurl = \"https://x.example\"\n", WebSearch{}, "web_search: backend is missing"},
		{"searxng without url", "[web_search]\nbackend = \"searxng\"\n", WebSearch{}, `backend "searxng" needs url`},
		{"bad url", "[web_search]\nbackend = \"brave\"\nurl = \"api.search.brave.com\"\n", WebSearch{}, `web_search: url "api.search.brave.com": want an http:// or https:// URL`},
		{"bad key_env", "[web_search]\nbackend = \"brave\"\nkey_env = \"$BRAVE\"\n", WebSearch{}, `key_env "$BRAVE"`},
		{"a key in the file", "[web_search]\nbackend = \"brave\"\nkey = \"secret\"\n", WebSearch{}, "unknown setting web_search.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.WebSearch != tt.want {
				t.Errorf("got %+v, want %+v", f.WebSearch, tt.want)
			}
			if f.WebSearch.Configured() != (tt.want.Backend != "") {
				t.Error("Configured")
			}
		})
	}
}
