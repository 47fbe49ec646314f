package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const example = `
model = "local:qwen3-coder"

[providers.local]
protocol  = "openai-chat"
base_url  = "http://127.0.0.1:8080/v1"
key_env   = "LOCAL_API_KEY"
tool_mode = "text"

[providers.local.capabilities]
parallel_calls = false

[providers.local.models."qwen3-coder"]
context_window = 262144
max_output     = 65536
price          = { input_per_m = 0, output_per_m = 0 }
estimated      = ["max_output"]

[models."openai:gpt-5-mini"]
price = { input_per_m = 0.25, output_per_m = 2.0, cached_per_m = 0.025 }
`

func ptr[T any](v T) *T { return &v }

func TestParseReadsProvidersAndOverrides(t *testing.T) {
	f, err := Parse(example)
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Model: "local:qwen3-coder",
		Providers: map[string]Provider{"local": {
			Protocol: "openai-chat", BaseURL: "http://127.0.0.1:8080/v1", KeyEnv: "LOCAL_API_KEY", ToolMode: "text",
			Capabilities: Capabilities{ParallelCalls: ptr(false)},
			Models: map[string]Capabilities{"qwen3-coder": {
				ContextWindow: ptr(262144), MaxOutput: ptr(65536), Price: &Price{}, Estimated: []string{"max_output"},
			}},
		}},
		Models: map[string]Capabilities{"openai:gpt-5-mini": {Price: &Price{InputPerM: 0.25, OutputPerM: 2, CachedPerM: 0.025}}},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown key", "[providers.x]\nprotocol = \"openai\"\nbase_ur = \"http://x\"", "unknown setting providers.x.base_ur"},
		{"missing protocol", "[providers.x]\nbase_url = \"http://x\"", "protocol is missing"},
		{"bad protocol", "[providers.x]\nprotocol = \"gemini\"", `protocol "gemini"`},
		{"chat without base url", "[providers.x]\nprotocol = \"openai-chat\"", "base_url is missing"},
		{"base url not http", "[providers.x]\nprotocol = \"openai\"\nbase_url = \"127.0.0.1:8080\"", "want an http"},
		{"bad tool mode", "[providers.x]\nprotocol = \"openai\"\ntool_mode = \"json\"", `tool_mode "json"`},
		{"bad provider name", "[providers.My]\nprotocol = \"openai\"", "providers.My: a provider name"},
		{"bad replay rule", "[models.\"openai:gpt-5\"]\nreasoning_replay = \"always\"", `reasoning_replay "always"`},
		{"negative price", "[models.\"openai:gpt-5\"]\nprice = { input_per_m = -1, output_per_m = 1 }", "must not be negative"},
		{"zero context", "[models.\"openai:gpt-5\"]\ncontext_window = 0", "context_window must be positive"},
		{"unknown estimated field", "[models.\"openai:gpt-5\"]\nestimated = [\"speed\"]", `estimated "speed"`},
		{"model key without provider", "[models.gpt-5]\nmax_output = 5", "want a PROVIDER:MODEL key"},
		{"default model without provider", "model = \"gpt-5\"", "want PROVIDER:MODEL"},
		{"wrong type", "model = 5", "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPathFollowsXDG(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/rein/config.toml"},
		{"relative xdg is ignored", map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config/rein/config.toml"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.config/rein/config.toml"},
		{"nothing", map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Path(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("Path = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadDefault(t *testing.T) {
	dir := t.TempDir()
	env := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return dir
		}
		return ""
	}
	f, err := LoadDefault(env)
	if err != nil || f.Path != "" || len(f.Providers) != 0 {
		t.Fatalf("without a file: %+v, %v; want an empty file", f, err)
	}
	p := filepath.Join(dir, "rein", "config.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err = LoadDefault(env)
	if err != nil || f.Path != p || f.Providers["local"].BaseURL != "http://127.0.0.1:8080/v1" {
		t.Fatalf("with a file: %+v, %v", f, err)
	}
	os.WriteFile(p, []byte("model = ["), 0o644)
	if _, err := LoadDefault(env); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a broken file: error %v, want one naming %s", err, p)
	}
}
