package provider

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func mustParse(t *testing.T, text string) *config.File {
	t.Helper()
	f, err := config.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const localConfig = `
[providers.local]
protocol = "openai-chat"
base_url = "http://127.0.0.1:9/v1"
tool_mode = "text"

[providers.local.models.qwen3]
context_window = 32768
price = { input_per_m = 0.1, output_per_m = 0.2 }

[providers.router]
protocol = "openai-chat"
base_url = "https://router.example/v1"
key_env = "ROUTER_KEY"

[providers.router.models."openai/gpt-5-mini"]

[models."openai:gpt-5-mini"]
price = { input_per_m = 1, output_per_m = 2 }
estimated = ["price"]
`

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		err  bool
	}{
		{"openai:gpt-5-mini", Spec{"openai", "gpt-5-mini"}, false},
		{"scripted:/tmp/a:b.yaml", Spec{"scripted", "/tmp/a:b.yaml"}, false},
		{"local:qwen3", Spec{"local", "qwen3"}, false},
		{"openai", Spec{}, true},
		{":gpt", Spec{}, true},
		{"openai:", Spec{}, true},
		{"Open AI:x", Spec{}, true},
		// A bare name resolves where the name tells the provider.
		{"gpt-5", Spec{"openai", "gpt-5"}, false},
		{"chatgpt-4o-latest", Spec{"openai", "chatgpt-4o-latest"}, false},
		{"o3", Spec{"openai", "o3"}, false},
		{"o4-mini", Spec{"openai", "o4-mini"}, false},
		{"o1-preview", Spec{"openai", "o1-preview"}, false},
		{"claude-sonnet-4-5", Spec{"anthropic", "claude-sonnet-4-5"}, false},
		{"deepseek-chat", Spec{"deepseek", "deepseek-chat"}, false},
		// and is refused where it does not.
		{"o3x", Spec{}, true},
		{"gpt-", Spec{}, true},
		{"qwen3", Spec{}, true},
		{"anthropic", Spec{}, true},
	} {
		got, err := ParseSpec(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSpec(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestDefaultChoosesConfigThenKeys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		env    map[string]string
		want   Spec
		err    error
	}{
		{"nothing", "", nil, Spec{}, ErrNoProvider},
		{"openai key", "", map[string]string{"OPENAI_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}, Spec{"openai", "gpt-5-mini"}, nil},
		{"anthropic before deepseek", "", map[string]string{"ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}, Spec{"anthropic", "claude-sonnet-4-5"}, nil},
		{"config model wins", `model = "local:qwen3"` + "\n" + localConfig, map[string]string{"OPENAI_API_KEY": "k"}, Spec{"local", "qwen3"}, nil},
		{"configured provider with its key", localConfig, map[string]string{"ROUTER_KEY": "k"}, Spec{"router", "openai/gpt-5-mini"}, nil},
		{"a keyless provider is not guessed", localConfig, nil, Spec{}, ErrNoProvider},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Default(Config{Getenv: env(tc.env), File: mustParse(t, tc.config)})
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("Default = %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestErrNoProviderPointsAtDemo(t *testing.T) {
	for _, w := range []string{"OPENAI_API_KEY", "--model", "rein demo", "config"} {
		if !strings.Contains(ErrNoProvider.Error(), w) {
			t.Errorf("ErrNoProvider lacks %q", w)
		}
	}
}

func TestResolve(t *testing.T) {
	keys := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k", "ROUTER_KEY": "k"}
	for _, tc := range []struct {
		name      string
		spec      Spec
		baseURL   string
		protocol  string
		url       string
		toolMode  string
		ctx       int
		replay    ReplayRule
		price     llm.Price
		estimated []string
		source    string
	}{
		{"built-in model", Spec{"openai", "gpt-5-mini"}, "", "openai", "", "native", 400_000, ReplayEncrypted, llm.Price{InputPerM: 1, OutputPerM: 2}, []string{"price"}, "config"},
		{"dated variant", Spec{"anthropic", "claude-sonnet-4-5-20250929"}, "", "anthropic", "", "native", 200_000, ReplaySigned, llm.Price{InputPerM: 3, OutputPerM: 15, CachedPerM: 0.3}, nil, "built-in"},
		{"OpenAI over Chat returns no reasoning", Spec{"openai-chat", "gpt-5"}, "", "openai-chat", "", "native", 400_000, ReplayNone, llm.Price{InputPerM: 1.25, OutputPerM: 10, CachedPerM: 0.125}, nil, "built-in"},
		{"deepseek base url", Spec{"deepseek", "deepseek-reasoner"}, "", "openai-chat", "https://api.deepseek.com", "native", 128_000, ReplayToolTurn, llm.Price{InputPerM: 0.28, OutputPerM: 0.42, CachedPerM: 0.028}, []string{"parallel_calls", "price"}, "built-in"},
		{"unknown model", Spec{"openai", "gpt-9"}, "http://127.0.0.1:1/v1", "openai", "http://127.0.0.1:1/v1", "native", 128_000, ReplayEncrypted, llm.Price{}, config.Fields, "default"},
		{"configured text mode", Spec{"local", "qwen3"}, "", "openai-chat", "http://127.0.0.1:9/v1", "text", 32_768, ReplayToolTurn, llm.Price{InputPerM: 0.1, OutputPerM: 0.2},
			[]string{"max_output", "parallel_calls", "reasoning_replay"}, "config"},
		{"router prefix finds the table", Spec{"router", "openai/gpt-5-mini"}, "", "openai-chat", "https://router.example/v1", "native", 400_000, ReplayNone, llm.Price{InputPerM: 0.25, OutputPerM: 2, CachedPerM: 0.025}, nil, "built-in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Config{Getenv: env(keys), File: mustParse(t, localConfig)}
			d.BaseURL = tc.baseURL
			r, err := Resolve(tc.spec, d)
			if err != nil {
				t.Fatal(err)
			}
			if r.Model == nil || r.Protocol != tc.protocol || r.BaseURL != tc.url || r.ToolMode != tc.toolMode {
				t.Errorf("resolved %s %q %s (model %v); want %s %q %s", r.Protocol, r.BaseURL, r.ToolMode, r.Model, tc.protocol, tc.url, tc.toolMode)
			}
			c := r.Caps
			if c.ContextWindow != tc.ctx || c.ReasoningReplay != tc.replay || c.LoopPrice() != tc.price || c.Source != tc.source {
				t.Errorf("caps %+v; want context %d, replay %s, price %+v, source %s", c, tc.ctx, tc.replay, tc.price, tc.source)
			}
			got, want := slices.Sorted(slices.Values(c.Estimated)), slices.Sorted(slices.Values(tc.estimated))
			if !slices.Equal(got, want) {
				t.Errorf("estimated %v, want %v", got, want)
			}
			if (tc.toolMode == "text") == c.NativeTools {
				t.Errorf("native tools %v in %s tool mode", c.NativeTools, tc.toolMode)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   Spec
		config string
		env    map[string]string
		want   string
	}{
		{"unknown provider lists the configured ones", Spec{"nope", "x"}, localConfig, nil, "configured: local, router"},
		{"missing key", Spec{"openai", "gpt-5"}, "", nil, "OPENAI_API_KEY is not set"},
		{"missing configured key", Spec{"router", "m"}, localConfig, nil, "ROUTER_KEY is not set"},
		{"missing script", Spec{"scripted", "/does/not/exist.yaml"}, "", nil, "scripted model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.spec, Config{Getenv: env(tc.env), File: mustParse(t, tc.config)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTextToolModeReachesEveryProtocol checks that tool_mode = "text" (or a
// model without native tools) drives the adapter of each protocol in text
// tool mode.
func TestTextToolModeReachesEveryProtocol(t *testing.T) {
	for _, tc := range []struct {
		protocol, mode, caps string
		want                 bool
	}{
		{"anthropic", "text", "", true},
		{"openai", "text", "", true},
		{"openai-chat", "text", "", true},
		{"anthropic", "native", "", false},
		{"openai", "", "", false},
		{"anthropic", "", "native_tools = false", true},
	} {
		t.Run(tc.protocol+"/"+tc.mode+tc.caps, func(t *testing.T) {
			conf := "[providers.p]\nprotocol = \"" + tc.protocol + "\"\nbase_url = \"http://127.0.0.1:1\"\n"
			if tc.mode != "" {
				conf += "tool_mode = \"" + tc.mode + "\"\n"
			}
			if tc.caps != "" {
				conf += "[providers.p.capabilities]\n" + tc.caps + "\n"
			}
			c := Config{Getenv: env(nil), File: mustParse(t, conf)}
			r, err := Resolve(Spec{"p", "m"}, c)
			if err != nil {
				t.Fatal(err)
			}
			var got bool
			if tc.protocol == "anthropic" {
				got = r.anthropicOptions("k", c).TextTools
			} else {
				got = r.openaiOptions("k", c).TextTools
			}
			if got != tc.want || (r.ToolMode == config.ToolModeText) != tc.want {
				t.Errorf("text tools %v (tool mode %q), want %v", got, r.ToolMode, tc.want)
			}
		})
	}
}

func TestConfiguredNamesMayNotShadowBuiltIns(t *testing.T) {
	e := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "OPENAI_API_KEY": "k"}
	writeConfig(t, e["XDG_CONFIG_HOME"], "[providers.openai]\nprotocol = \"openai\"\n")
	_, err := Resolve(Spec{"openai", "gpt-5"}, Config{Getenv: env(e)})
	if err == nil || !strings.Contains(err.Error(), "built-in provider") {
		t.Errorf("error %v, want a refusal to shadow the built-in provider", err)
	}
}

func TestKnownModelsAreSane(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range KnownModels() {
		c := k.Caps
		if seen[k.Name] {
			t.Errorf("%s listed twice", k.Name)
		}
		seen[k.Name] = true
		if c.ContextWindow <= 0 || c.MaxOutput <= 0 || c.MaxOutput > c.ContextWindow {
			t.Errorf("%s: context %d, max output %d", k.Name, c.ContextWindow, c.MaxOutput)
		}
		if c.Price == nil || c.Price.InputPerM <= 0 || c.Price.OutputPerM < c.Price.InputPerM || c.Price.CachedPerM > c.Price.InputPerM {
			t.Errorf("%s: price %+v", k.Name, c.Price)
		}
		for _, e := range c.Estimated {
			if !slices.Contains(config.Fields, e) {
				t.Errorf("%s: estimated %q is not a field", k.Name, e)
			}
		}
		if !slices.Contains([]string{"openai", "anthropic", "deepseek"}, k.Family) {
			t.Errorf("%s: family %q", k.Name, k.Family)
		}
	}
}

func TestLookupPrefersTheLongestName(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-5":                 "gpt-5",
		"gpt-5-mini-2025-08-07": "gpt-5-mini",
		"openai/gpt-4.1-mini":   "gpt-4.1-mini",
		"gpt-4o-2024-08-06":     "gpt-4o",
		"GPT-4O-MINI":           "gpt-4o-mini",
		"gpt-50":                "",
		"o3-pro":                "o3",
	} {
		k, ok := lookupKnown(in)
		if got := k.Name; got != want || ok != (want != "") {
			t.Errorf("lookupKnown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestListShowsBuiltInAndConfigured(t *testing.T) {
	list, err := List(Config{Getenv: env(map[string]string{"OPENAI_API_KEY": "k"}), File: mustParse(t, localConfig)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if want := []string{"openai", "openai-chat", "anthropic", "deepseek", "local", "router"}; !slices.Equal(names, want) {
		t.Fatalf("providers %v, want %v", names, want)
	}
	if !list[0].KeySet || list[2].KeySet {
		t.Errorf("key set: openai %v, anthropic %v", list[0].KeySet, list[2].KeySet)
	}
	local := list[4]
	if local.ToolMode != "text" || len(local.Models) != 1 || local.Models[0].Caps.NativeTools || !local.KeySet {
		t.Errorf("local: %+v", local)
	}
	for _, m := range list[0].Models {
		if m.Name == "gpt-5-mini" && (m.Caps.LoopPrice() != llm.Price{InputPerM: 1, OutputPerM: 2} || !m.Caps.IsEstimated("price")) {
			t.Errorf("the config override of gpt-5-mini is not listed: %+v", m.Caps)
		}
	}
}

// writeConfig writes text as the config file under an XDG_CONFIG_HOME.
func writeConfig(t *testing.T, xdg, text string) {
	t.Helper()
	dir := filepath.Join(xdg, "rein")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
