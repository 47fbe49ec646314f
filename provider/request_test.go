package provider

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
)

// requestConfig sets request settings in every layer: a configured
// provider's table, its model tables, [models."P:*"] and [models."P:M"], for
// configured and built-in providers of the three protocols.
const requestConfig = `
[providers.claude]
protocol        = "anthropic"
base_url        = "http://127.0.0.1:9"
thinking_budget = 8000
prompt_cache    = true
max_tokens      = 32000

[providers.claude.models."claude-haiku-4-5"]
thinking_budget = 0

[providers.local]
protocol         = "openai-chat"
base_url         = "http://127.0.0.1:9/v1"
tool_mode        = "text"
reasoning_effort = "high"
token_param      = "max_tokens"
stream_usage     = false
headers          = { "X-Title" = "rein" }
extra            = { chat_template_kwargs = { enable_thinking = true }, top_k = 20 }

[providers.local.models.qwen3]
reasoning_effort = "low"
extra            = { chat_template_kwargs = { enable_thinking = false } }

[providers.local.models.coder]
reasoning_effort = "low"

[models."local:coder"]
reasoning_effort = "medium"

[models."local:*"]
headers = { "X-Other" = "1" }

[providers.resp]
protocol          = "openai"
base_url          = "http://127.0.0.1:9/v1"
reasoning_effort  = "minimal"
reasoning_summary = "detailed"
store             = true

[models."anthropic:claude-sonnet-4-5"]
thinking_budget = 16000

[models."anthropic:*"]
prompt_cache = true

[models."openai:gpt-5-mini"]
reasoning_effort = "low"

[models."openai-chat:gpt-5"]
token_param = "max_completion_tokens"

[models."deepseek:*"]
extra = { thinking = { type = "enabled" } }
`

func TestResolveCarriesRequestSettings(t *testing.T) {
	keys := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}
	for _, tc := range []struct {
		name      string
		spec      Spec
		anthropic *anthropic.Options // the fields compared: ThinkingBudget, PromptCache, MaxTokens
		openai    *openai.Options    // ReasoningEffort, ReasoningSummary, Store, TokenParam, NoStreamUsage, Extra, Headers, TextTools
	}{
		{"configured anthropic provider", Spec{"claude", "claude-sonnet-4-5"},
			&anthropic.Options{ThinkingBudget: 8000, PromptCache: true, MaxTokens: 32000}, nil},
		{"a model turns thinking off", Spec{"claude", "claude-haiku-4-5"},
			&anthropic.Options{ThinkingBudget: 0, PromptCache: true, MaxTokens: 32000}, nil},
		{"built-in model over the provider's defaults", Spec{"anthropic", "claude-sonnet-4-5"},
			&anthropic.Options{ThinkingBudget: 16000, PromptCache: true}, nil},
		{"built-in provider's defaults", Spec{"anthropic", "claude-opus-4-1"},
			&anthropic.Options{PromptCache: true}, nil},
		{"configured chat provider, model over provider", Spec{"local", "qwen3"}, nil, &openai.Options{
			ReasoningEffort: "low", TokenParam: openai.MaxTokens, NoStreamUsage: true, TextTools: true,
			Extra:   map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}, "top_k": int64(20)},
			Headers: map[string]string{"X-Title": "rein", "X-Other": "1"},
		}},
		{"models key over the provider's model table", Spec{"local", "coder"}, nil, &openai.Options{
			ReasoningEffort: "medium", TokenParam: openai.MaxTokens, NoStreamUsage: true, TextTools: true,
			Extra:   map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}, "top_k": int64(20)},
			Headers: map[string]string{"X-Title": "rein", "X-Other": "1"},
		}},
		{"provider's settings for an unlisted model", Spec{"local", "other"}, nil, &openai.Options{
			ReasoningEffort: "high", TokenParam: openai.MaxTokens, NoStreamUsage: true, TextTools: true,
			Extra:   map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}, "top_k": int64(20)},
			Headers: map[string]string{"X-Title": "rein", "X-Other": "1"},
		}},
		{"configured responses provider", Spec{"resp", "gpt-5"}, nil,
			&openai.Options{ReasoningEffort: "minimal", ReasoningSummary: "detailed", Store: true}},
		{"built-in responses model", Spec{"openai", "gpt-5-mini"}, nil, &openai.Options{ReasoningEffort: "low"}},
		{"built-in responses model without settings", Spec{"openai", "gpt-5"}, nil, &openai.Options{}},
		{"built-in chat model", Spec{"openai-chat", "gpt-5"}, nil, &openai.Options{TokenParam: openai.MaxCompletionTokens}},
		{"deepseek's defaults", Spec{"deepseek", "deepseek-reasoner"}, nil,
			&openai.Options{Extra: map[string]any{"thinking": map[string]any{"type": "enabled"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Getenv: env(keys), File: mustParse(t, requestConfig)}
			r, err := Resolve(tc.spec, c)
			if err != nil {
				t.Fatal(err)
			}
			if w := tc.anthropic; w != nil {
				o := r.anthropicOptions("k", c)
				if o.ThinkingBudget != w.ThinkingBudget || o.PromptCache != w.PromptCache || o.MaxTokens != w.MaxTokens {
					t.Errorf("anthropic options: thinking %d, cache %v, max tokens %d; want %d, %v, %d",
						o.ThinkingBudget, o.PromptCache, o.MaxTokens, w.ThinkingBudget, w.PromptCache, w.MaxTokens)
				}
				if r.Model == nil || r.Protocol != "anthropic" {
					t.Errorf("protocol %s, model %T", r.Protocol, r.Model)
				}
			}
			if w := tc.openai; w != nil {
				o := r.openaiOptions("k", c)
				got := openai.Options{ReasoningEffort: o.ReasoningEffort, ReasoningSummary: o.ReasoningSummary, Store: o.Store,
					TokenParam: o.TokenParam, NoStreamUsage: o.NoStreamUsage, Extra: o.Extra, Headers: o.Headers, TextTools: o.TextTools}
				if !reflect.DeepEqual(got, *w) {
					t.Errorf("openai options\ngot  %+v\nwant %+v", got, *w)
				}
				if o.Model != tc.spec.Model || o.Name != tc.spec.Provider || o.BaseURL != r.BaseURL {
					t.Errorf("options name the model %q at %q as %q; want %q at %q as %q", o.Model, o.BaseURL, o.Name, tc.spec.Model, r.BaseURL, tc.spec.Provider)
				}
			}
		})
	}
}

func TestMergingDoesNotChangeTheFile(t *testing.T) {
	f := mustParse(t, requestConfig)
	c := Config{Getenv: env(map[string]string{"OPENAI_API_KEY": "k"}), File: f}
	if _, err := Resolve(Spec{"local", "qwen3"}, c); err != nil {
		t.Fatal(err)
	}
	if got := f.Providers["local"].Headers; !maps.Equal(got, map[string]string{"X-Title": "rein"}) {
		t.Errorf("the provider's headers became %v", got)
	}
	if got := f.Providers["local"].Extra["chat_template_kwargs"]; !reflect.DeepEqual(got, map[string]any{"enable_thinking": true}) {
		t.Errorf("the provider's extra became %v", got)
	}
}

func TestResolveRefusesSettingsABuiltInProtocolDoesNotTake(t *testing.T) {
	keys := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}
	for _, tc := range []struct {
		name, config string
		spec         Spec
		want         string
	}{
		{"thinking budget on openai-chat", "[models.\"openai-chat:gpt-5\"]\nthinking_budget = 8000", Spec{"openai-chat", "gpt-5"},
			`config: models."openai-chat:gpt-5": thinking_budget is a setting of the anthropic protocol only, and this provider speaks openai-chat (use reasoning_effort)`},
		{"reasoning summary on deepseek", "[models.\"deepseek:*\"]\nreasoning_summary = \"auto\"", Spec{"deepseek", "deepseek-chat"},
			`models."deepseek:*": reasoning_summary is a setting of the openai protocol (the Responses API) only, and this provider speaks openai-chat`},
		{"reasoning effort on anthropic", "[models.\"anthropic:*\"]\nreasoning_effort = \"high\"", Spec{"anthropic", "claude-sonnet-4-5"},
			`models."anthropic:*": reasoning_effort is a setting of the openai and openai-chat protocols only, and this provider speaks anthropic (use thinking_budget)`},
		{"token param on the responses api", "[models.\"openai:gpt-5\"]\ntoken_param = \"max_tokens\"", Spec{"openai", "gpt-5"},
			`models."openai:gpt-5": token_param is a setting of the openai-chat protocol only, and this provider speaks openai`},
		{"headers on anthropic", "[models.\"anthropic:claude-sonnet-4-5\"]\nheaders = { X-Title = \"rein\" }", Spec{"anthropic", "claude-sonnet-4-5"},
			"headers is a setting of the openai and openai-chat protocols only"},
		{"settings for a scripted model", "[models.\"scripted:*\"]\nprompt_cache = true", Spec{"scripted", "x.yaml"},
			`models."scripted:*": prompt_cache is a setting of the anthropic protocol only, and this provider speaks scripted`},
		{"a wrong table fails every model", "[models.\"openai-chat:gpt-5\"]\nstore = true", Spec{"anthropic", "claude-sonnet-4-5"},
			`models."openai-chat:gpt-5": store is a setting of the openai protocol`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.spec, Config{Getenv: env(keys), File: mustParse(t, tc.config)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

func TestRequestSettingErrorsNameTheFile(t *testing.T) {
	e := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "OPENAI_API_KEY": "k"}
	writeConfig(t, e["XDG_CONFIG_HOME"], "[models.\"openai-chat:gpt-5\"]\nthinking_budget = 8000\n")
	path := filepath.Join(e["XDG_CONFIG_HOME"], "rein", "config.toml")
	_, err := Resolve(Spec{"openai-chat", "gpt-5"}, Config{Getenv: env(e)})
	if want := "config: " + path + `: models."openai-chat:gpt-5": thinking_budget`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
	if _, err := List(Config{Getenv: env(e)}); err == nil || !strings.Contains(err.Error(), "thinking_budget") {
		t.Errorf("List: error %v, want the same refusal", err)
	}
}

func TestListShowsRequestSettings(t *testing.T) {
	list, err := List(Config{Getenv: env(nil), File: mustParse(t, requestConfig)})
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]ModelInfo{}
	for _, p := range list {
		for _, m := range p.Models {
			models[p.Name+":"+m.Name] = m
		}
	}
	for _, tc := range []struct {
		model string
		check func(m ModelInfo) bool
	}{
		{"anthropic:claude-sonnet-4-5", func(m ModelInfo) bool {
			return m.Request != nil && *m.Request.ThinkingBudget == 16000 && *m.Request.PromptCache
		}},
		{"anthropic:claude-opus-4-1", func(m ModelInfo) bool {
			return m.Request != nil && m.Request.ThinkingBudget == nil && *m.Request.PromptCache
		}},
		{"openai:gpt-5", func(m ModelInfo) bool { return m.Request == nil }},
		{"local:qwen3", func(m ModelInfo) bool {
			return m.Request != nil && *m.Request.ReasoningEffort == "low" && m.Request.Headers["X-Other"] == "1" && m.Request.Extra["top_k"] == int64(20)
		}},
		{"local:coder", func(m ModelInfo) bool { return m.Request != nil && *m.Request.ReasoningEffort == "medium" }},
		{"claude:claude-haiku-4-5", func(m ModelInfo) bool { return m.Request != nil && *m.Request.ThinkingBudget == 0 }},
	} {
		m, ok := models[tc.model]
		if !ok {
			t.Errorf("%s is not listed", tc.model)
			continue
		}
		if !tc.check(m) {
			b, _ := json.Marshal(m.Request)
			t.Errorf("%s: request %s", tc.model, b)
		}
	}
	for name := range models {
		if strings.HasSuffix(name, ":*") {
			t.Errorf("%s is listed as a model", name)
		}
	}
}

// The settings reach the wire: each protocol's mock server captures the
// request the adapter sends.

// stream makes one call and reads it to the end.
func stream(t *testing.T, m llm.Model) {
	t.Helper()
	s, err := m.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(s); err != nil {
		t.Fatal(err)
	}
}

func body(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("request body %s: %v", b, err)
	}
	return v
}

func TestAnthropicRequestCarriesTheSettings(t *testing.T) {
	srv := testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: testkit.Round{Reasoning: "think", Text: "hello"}})
	f := mustParse(t, "[providers.claude]\nprotocol = \"anthropic\"\nbase_url = \""+srv.BaseURL()+"\"\nthinking_budget = 8000\nprompt_cache = true\nmax_tokens = 20000\n")
	m, err := Open(Spec{"claude", "claude-sonnet-4-5"}, Config{Getenv: env(nil), File: f})
	if err != nil {
		t.Fatal(err)
	}
	stream(t, m)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	b := body(t, reqs[0].Body)
	if got := b["thinking"]; !reflect.DeepEqual(got, map[string]any{"type": "enabled", "budget_tokens": 8000.0}) {
		t.Errorf("thinking %v, want enabled with budget_tokens 8000", got)
	}
	if got := b["max_tokens"]; got != 20000.0 {
		t.Errorf("max_tokens %v, want 20000", got)
	}
	if !strings.Contains(string(reqs[0].Body), `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("no cache_control in %s", reqs[0].Body)
	}
}

// headerRecorder forwards to a mock server and keeps the headers of every
// request.
type headerRecorder struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func recordHeaders(t *testing.T, target string) *headerRecorder {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &headerRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.headers = append(h.headers, r.Header.Clone())
		h.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

func TestChatRequestCarriesTheSettings(t *testing.T) {
	srv := testkit.NewChatServer(t, testkit.Round{Text: "hello"})
	rec := recordHeaders(t, srv.URL)
	f := mustParse(t, `
[providers.local]
protocol         = "openai-chat"
base_url         = "`+rec.URL+`/v1"
reasoning_effort = "high"
token_param      = "max_completion_tokens"
stream_usage     = false
headers          = { "X-Title" = "rein" }
extra            = { chat_template_kwargs = { enable_thinking = true }, top_k = 20 }
`)
	m, err := Open(Spec{"local", "qwen3"}, Config{Getenv: env(nil), File: f})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}, MaxOutputTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(s); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	b := body(t, reqs[0].Body)
	for k, want := range map[string]any{
		"reasoning_effort":      "high",
		"max_completion_tokens": 100.0,
		"chat_template_kwargs":  map[string]any{"enable_thinking": true},
		"top_k":                 20.0,
	} {
		if !reflect.DeepEqual(b[k], want) {
			t.Errorf("%s = %v, want %v", k, b[k], want)
		}
	}
	for _, k := range []string{"stream_options", "max_tokens"} {
		if v, ok := b[k]; ok {
			t.Errorf("%s = %v, want none", k, v)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.headers) != 1 || rec.headers[0].Get("X-Title") != "rein" {
		t.Errorf("headers %v, want X-Title: rein", rec.headers)
	}
}

func TestResponsesRequestCarriesTheSettings(t *testing.T) {
	srv := testkit.NewResponsesServer(t, testkit.Round{Text: "hello"})
	f := mustParse(t, `
[providers.resp]
protocol          = "openai"
base_url          = "`+srv.BaseURL()+`"
reasoning_effort  = "low"
reasoning_summary = "concise"
store             = true
extra             = { service_tier = "flex" }
`)
	m, err := Open(Spec{"resp", "gpt-5"}, Config{Getenv: env(nil), File: f})
	if err != nil {
		t.Fatal(err)
	}
	stream(t, m)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	b := body(t, reqs[0].Body)
	for k, want := range map[string]any{
		"reasoning":    map[string]any{"effort": "low", "summary": "concise"},
		"store":        true,
		"service_tier": "flex",
	} {
		if !reflect.DeepEqual(b[k], want) {
			t.Errorf("%s = %v, want %v", k, b[k], want)
		}
	}
}
