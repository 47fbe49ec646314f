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
			Models: map[string]Model{"qwen3-coder": {Capabilities: Capabilities{
				ContextWindow: ptr(262144), MaxOutput: ptr(65536), Price: &Price{}, Estimated: []string{"max_output"},
			}}},
		}},
		Models: map[string]Model{"openai:gpt-5-mini": {Capabilities: Capabilities{Price: &Price{InputPerM: 0.25, OutputPerM: 2, CachedPerM: 0.025}}}},
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

const requestExample = `
[providers.claude]
protocol        = "anthropic"
thinking_budget = 8000
prompt_cache    = true
max_tokens      = 32000

[providers.claude.models."claude-haiku-4-5"]
thinking_budget = 0
max_output      = 64000

[models."anthropic:claude-sonnet-4-5"]
thinking_budget = 16000

[models."anthropic:*"]
prompt_cache = true

[providers.local]
protocol         = "openai-chat"
base_url         = "http://127.0.0.1:8080/v1"
reasoning_effort = "high"
token_param      = "max_tokens"
stream_usage     = false
headers          = { "X-Title" = "rein" }
extra            = { chat_template_kwargs = { enable_thinking = true }, top_k = 20 }

[providers.local.models.qwen3]
reasoning_effort = "low"
extra            = { chat_template_kwargs = { enable_thinking = false } }

[providers.resp]
protocol          = "openai"
reasoning_effort  = "minimal"
reasoning_summary = "detailed"
store             = true
`

func TestParseReadsRequestSettings(t *testing.T) {
	f, err := Parse(requestExample)
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Providers: map[string]Provider{
			"claude": {
				Protocol: "anthropic",
				Request:  Request{ThinkingBudget: ptr(8000), PromptCache: ptr(true), MaxTokens: ptr(32000)},
				Models: map[string]Model{"claude-haiku-4-5": {
					Capabilities: Capabilities{MaxOutput: ptr(64000)},
					Request:      Request{ThinkingBudget: ptr(0)},
				}},
			},
			"local": {
				Protocol: "openai-chat", BaseURL: "http://127.0.0.1:8080/v1",
				Request: Request{
					ReasoningEffort: ptr("high"), TokenParam: ptr("max_tokens"), StreamUsage: ptr(false),
					Headers: map[string]string{"X-Title": "rein"},
					Extra:   map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}, "top_k": int64(20)},
				},
				Models: map[string]Model{"qwen3": {Request: Request{
					ReasoningEffort: ptr("low"),
					Extra:           map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}},
				}}},
			},
			"resp": {
				Protocol: "openai",
				Request:  Request{ReasoningEffort: ptr("minimal"), ReasoningSummary: ptr("detailed"), Store: ptr(true)},
			},
		},
		Models: map[string]Model{
			"anthropic:claude-sonnet-4-5": {Request: Request{ThinkingBudget: ptr(16000)}},
			"anthropic:*":                 {Request: Request{PromptCache: ptr(true)}},
		},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
	}
}

func TestParseRejectsRequestSettings(t *testing.T) {
	const (
		anth = "[providers.c]\nprotocol = \"anthropic\"\n"
		chat = "[providers.l]\nprotocol = \"openai-chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n"
		resp = "[providers.r]\nprotocol = \"openai\"\n"
	)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"thinking budget below the minimum", anth + "thinking_budget = 500",
			[]string{"providers.c: thinking_budget 500: use 0 (thinking off) or at least 1024 tokens"}},
		{"negative thinking budget", anth + "thinking_budget = -1", []string{"providers.c: thinking_budget -1: use 0"}},
		{"thinking budget in a model table", anth + "[providers.c.models.m]\nthinking_budget = 1023",
			[]string{`providers.c.models."m": thinking_budget 1023`}},
		{"thinking budget of a built-in model", "[models.\"anthropic:claude-sonnet-4-5\"]\nthinking_budget = 100",
			[]string{`models."anthropic:claude-sonnet-4-5": thinking_budget 100`}},
		{"zero max tokens", anth + "max_tokens = 0", []string{"providers.c: max_tokens 0: must be positive"}},
		{"bad reasoning effort", resp + "reasoning_effort = \"extreme\"",
			[]string{`providers.r: reasoning_effort "extreme": use one of minimal, low, medium, high`}},
		{"bad reasoning summary", resp + "reasoning_summary = \"short\"",
			[]string{`reasoning_summary "short": use one of auto, concise, detailed`}},
		{"bad token param", chat + "token_param = \"max_output_tokens\"",
			[]string{`token_param "max_output_tokens": use one of max_tokens, max_completion_tokens`}},
		{"thinking budget on openai-chat", chat + "thinking_budget = 8000",
			[]string{"providers.l: thinking_budget is a setting of the anthropic protocol only, and this provider speaks openai-chat (use reasoning_effort)"}},
		{"reasoning summary on openai-chat", chat + "reasoning_summary = \"auto\"",
			[]string{"providers.l: reasoning_summary is a setting of the openai protocol (the Responses API) only, and this provider speaks openai-chat"}},
		{"store on openai-chat model", chat + "[providers.l.models.m]\nstore = true",
			[]string{`providers.l.models."m": store is a setting of the openai protocol (the Responses API) only`}},
		{"token param on openai", resp + "token_param = \"max_tokens\"",
			[]string{"providers.r: token_param is a setting of the openai-chat protocol only, and this provider speaks openai"}},
		{"stream usage on anthropic", anth + "stream_usage = false", []string{"stream_usage is a setting of the openai-chat protocol only"}},
		{"reasoning effort on anthropic", anth + "reasoning_effort = \"high\"",
			[]string{"providers.c: reasoning_effort is a setting of the openai and openai-chat protocols only, and this provider speaks anthropic (use thinking_budget)"}},
		{"headers on anthropic", anth + "headers = { X-Title = \"rein\" }", []string{"providers.c: headers is a setting of the openai and openai-chat protocols only"}},
		{"extra on anthropic", anth + "extra = { top_k = 5 }", []string{"providers.c: extra is a setting of the openai and openai-chat protocols only"}},
		{"prompt cache through a models key", chat + "[models.\"l:m\"]\nprompt_cache = true",
			[]string{`models."l:m": prompt_cache is a setting of the anthropic protocol only, and this provider speaks openai-chat`}},
		{"every wrong setting is named", chat + "thinking_budget = 8000\nprompt_cache = true",
			[]string{"providers.l: thinking_budget is a setting", "providers.l: prompt_cache is a setting"}},
		{"extra replacing the messages", chat + "extra = { messages = [] }",
			[]string{"providers.l: extra.messages: rein writes messages itself"}},
		{"extra that is not JSON", chat + "extra = { temperature = nan }", []string{"providers.l: extra.temperature: not a JSON value"}},
		{"bad header name", chat + "headers = { \"X Title\" = \"rein\" }", []string{`providers.l: headers "X Title": not a header name`}},
		{"header value with a line break", chat + "headers = { X-Title = \"a\\nb\" }",
			[]string{`providers.l: headers "X-Title": a header value may not hold a line break`}},
		{"wrong type", anth + "prompt_cache = \"yes\"", []string{"prompt_cache"}},
		{"request setting in the capabilities table", anth + "[providers.c.capabilities]\nthinking_budget = 8000",
			[]string{"unknown setting providers.c.capabilities.thinking_budget"}},
		{"unknown key beside extra", chat + "extra = { a = { b = 1 } }\nextras = 1", []string{"unknown setting providers.l.extras"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant one containing %q", err, w)
				}
			}
		})
	}
}

func TestParseAcceptsRequestSettings(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"thinking off", "[providers.c]\nprotocol = \"anthropic\"\nthinking_budget = 0"},
		{"the minimum budget", "[providers.c]\nprotocol = \"anthropic\"\nthinking_budget = 1024"},
		{"nested extra tables", "[providers.l]\nprotocol = \"openai\"\n[providers.l.extra.reasoning]\neffort = \"high\"\n[providers.l.extra.reasoning.x]\ny = [1, 2]"},
		{"nested extra in a model table", "[providers.l]\nprotocol = \"openai\"\n[providers.l.models.m.extra.provider]\norder = [\"a\"]"},
		{"nested extra of a built-in model", "[models.\"openai:gpt-5\".extra.reasoning]\neffort = \"high\""},
		// A built-in provider's protocol is checked by package provider.
		{"any setting for a built-in provider", "[models.\"openai:*\"]\nthinking_budget = 2048"},
		{"a model named extra", "[providers.l]\nprotocol = \"openai\"\n[providers.l.models.extra]\ncontext_window = 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.text); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLoadNamesTheFileTableAndField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte("[providers.claude]\nprotocol = \"anthropic\"\nthinking_budget = 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+": providers.claude: thinking_budget 100") {
		t.Errorf("error %v, want one naming %s, the table and the field", err, p)
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
