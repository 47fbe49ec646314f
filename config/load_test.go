package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
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
reasoning_effort    = "none"
parallel_tool_calls = false
extra               = { chat_template_kwargs = { enable_thinking = false } }

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
					ReasoningEffort: ptr("none"), ParallelToolCalls: ptr(false),
					Extra: map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}},
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
			[]string{`providers.r: reasoning_effort "extreme": use one of none, minimal, low, medium, high, xhigh, max`}},
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

func TestParseReadsTheSandboxTable(t *testing.T) {
	f, err := Parse(`
[sandbox]
memory         = "512MiB"
cpu_time       = "1m30s"
max_processes  = 256
max_file_size  = 1048576
max_open_files = "none"
deny_read      = ["secrets/**", "*.key"]
deny_write     = ["Makefile", "/ci/"]
allow          = ["**/.env.example"]
env            = ["GOFLAGS", "NODE_OPTIONS"]
`)
	if err != nil {
		t.Fatal(err)
	}
	want := Sandbox{
		Memory: 512 << 20, CPUTime: 90 * time.Second, MaxProcesses: 256, MaxFileSize: 1 << 20, MaxOpenFiles: NoLimit,
		DenyRead: []string{"secrets/**", "*.key"}, DenyWrite: []string{"Makefile", "/ci/"}, Allow: []string{"**/.env.example"},
		Env: []string{"GOFLAGS", "NODE_OPTIONS"},
	}
	if !reflect.DeepEqual(f.Sandbox, want) {
		t.Errorf("got  %+v\nwant %+v", f.Sandbox, want)
	}
	o := f.Sandbox.Options()
	wantOpts := sandbox.Options{
		Limits: sandbox.Limits{Memory: 512 << 20, CPU: 90 * time.Second, Procs: 256, FileSize: 1 << 20, OpenFiles: -1},
		Deny:   sandbox.DenyRules{Read: want.DenyRead, Write: want.DenyWrite, Allow: want.Allow},
		Env:    want.Env,
	}
	if !reflect.DeepEqual(o, wantOpts) {
		t.Errorf("Options() = %+v\nwant %+v", o, wantOpts)
	}
	if got := f.Sandbox.LimitsSet(); !slices.Equal(got, []string{"memory", "cpu_time", "max_processes", "max_file_size", "max_open_files"}) {
		t.Errorf("LimitsSet() = %v", got)
	}

	// Without the table, every limit and the deny list are the defaults.
	f, err = Parse("")
	if err != nil {
		t.Fatal(err)
	}
	if o := f.Sandbox.Options(); !reflect.DeepEqual(o.Limits, sandbox.Limits{}) || len(o.Deny.Read)+len(o.Deny.Write)+len(o.Deny.Allow) != 0 || len(f.Sandbox.LimitsSet()) != 0 {
		t.Errorf("an empty file: %+v", o)
	}
}

func TestParseSandboxValues(t *testing.T) {
	const none = NoLimit
	for _, tc := range []struct {
		value string
		size  int64 // memory and max_file_size
	}{
		{`1`, 1},
		{`2147483648`, 2 << 30},
		{`-1`, none},
		{`"none"`, none},
		{`"None"`, none},
		{`"-1"`, none},
		{`"4096"`, 4096},
		{`"100B"`, 100},
		{`"100K"`, 100 << 10},
		{`"100KB"`, 100 << 10},
		{`"100KiB"`, 100 << 10},
		{`"100kb"`, 100 << 10},
		{`"512MiB"`, 512 << 20},
		{`"512m"`, 512 << 20},
		{`"1G"`, 1 << 30},
		{`"2GB"`, 2 << 30},
		{`"2GiB"`, 2 << 30},
		{`"2 GiB"`, 2 << 30}, // as rein doctor writes it
		{`" 3g "`, 3 << 30},
		{`"1.5GiB"`, 3 << 29},
		{`"0.5K"`, 512},
		{`"1.0001K"`, 1024}, // rounded down to a byte
		{`"1T"`, 1 << 40},
		{`"1TiB"`, 1 << 40},
	} {
		for _, key := range []string{"memory", "max_file_size"} {
			f, err := Parse("[sandbox]\n" + key + " = " + tc.value)
			if err != nil {
				t.Errorf("%s = %s: %v", key, tc.value, err)
				continue
			}
			got := f.Sandbox.Memory
			if key == "max_file_size" {
				got = f.Sandbox.MaxFileSize
			}
			if got != tc.size {
				t.Errorf("%s = %s: %d bytes, want %d", key, tc.value, got, tc.size)
			}
		}
	}
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{`"90s"`, 90 * time.Second},
		{`"1h"`, time.Hour},
		{`"500ms"`, 500 * time.Millisecond},
		{`"0s"`, 0},
		{`"0"`, 0},
		{`0`, 0},
		{`-1`, none},
		{`"none"`, none},
	} {
		f, err := Parse("[sandbox]\ncpu_time = " + tc.value)
		if err != nil || f.Sandbox.CPUTime != tc.want {
			t.Errorf("cpu_time = %s: %v, %v; want %v", tc.value, f.Sandbox.CPUTime, err, tc.want)
		}
	}
	for _, tc := range []struct {
		value string
		want  int
	}{
		{`1`, 1},
		{`4096`, 4096},
		{`-1`, none},
		{`"none"`, none},
	} {
		for _, key := range []string{"max_processes", "max_open_files"} {
			f, err := Parse("[sandbox]\n" + key + " = " + tc.value)
			if err != nil {
				t.Errorf("%s = %s: %v", key, tc.value, err)
				continue
			}
			got := f.Sandbox.MaxProcesses
			if key == "max_open_files" {
				got = f.Sandbox.MaxOpenFiles
			}
			if got != tc.want {
				t.Errorf("%s = %s: %d, want %d", key, tc.value, got, tc.want)
			}
		}
	}
	// Patterns: an empty list is no change; a dotted table works as well.
	for _, text := range []string{
		"[sandbox]\ndeny_read = []\nallow = []",
		"sandbox.deny_read = [\"*.key\"]",
		"sandbox = { memory = \"1G\", deny_write = [\"**/Makefile\", \"/build/\", \"{a,b}/*.lock\", \"[ab]?c\"] }",
	} {
		if _, err := Parse(text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

func TestParseRejectsSandboxValues(t *testing.T) {
	const (
		sizeHint    = `want a size such as "512MiB" or "2GiB" (K, M, G and T are powers of 1024`
		countHint   = `want a whole number such as`
		patternHint = `want a glob relative to the workspace root`
	)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "[sandbox]\nmemroy = \"1G\"",
			[]string{"unknown setting sandbox.memroy (the [sandbox] settings are memory, cpu_time, max_processes, max_file_size, max_open_files, deny_read, deny_write, allow, env)"}},
		{"a subtable", "[sandbox.limits]\nmemory = \"1G\"", []string{"unknown setting sandbox.limits"}},
		{"not a table", "sandbox = true", []string{"sandbox: want a table ([sandbox] with memory, cpu_time", "not a boolean"}},
		{"unknown unit", "[sandbox]\nmemory = \"2XB\"", []string{`sandbox: memory "2XB": unknown unit "XB"; ` + sizeHint}},
		{"a unit without a number", "[sandbox]\nmemory = \"GiB\"", []string{`sandbox: memory "GiB": ` + sizeHint}},
		{"two dots", "[sandbox]\nmemory = \"1.2.3G\"", []string{`sandbox: memory "1.2.3G": ` + sizeHint}},
		{"an exponent", "[sandbox]\nmemory = \"1e9\"", []string{`sandbox: memory "1e9": unknown unit "e9"`}},
		{"a negative size", "[sandbox]\nmax_file_size = \"-2G\"", []string{`sandbox: max_file_size "-2G": a size may not be negative`}},
		{"a negative number", "[sandbox]\nmemory = -2", []string{`sandbox: memory -2: a limit may not be negative; use "none" (or -1) for no limit`}},
		{"zero bytes", "[sandbox]\nmemory = 0",
			[]string{`sandbox: memory 0: 0 allows nothing; leave the key out for the default (2 GiB), or use "none" (or -1) for no limit`}},
		{"zero with a unit", "[sandbox]\nmax_file_size = \"0GiB\"", []string{`sandbox: max_file_size "0GiB": 0 allows nothing; leave the key out for the default (1 GiB)`}},
		{"less than a byte", "[sandbox]\nmemory = \"0.5B\"", []string{`sandbox: memory "0.5B": 0 allows nothing`}},
		{"too large", "[sandbox]\nmemory = \"9000000000T\"", []string{`sandbox: memory "9000000000T": too large`}},
		{"a float", "[sandbox]\nmemory = 1.5", []string{"sandbox: memory 1.5: " + sizeHint}},
		{"a boolean size", "[sandbox]\nmax_file_size = false", []string{"sandbox: max_file_size false: " + sizeHint}},
		{"a duration without a unit", "[sandbox]\ncpu_time = 90", []string{`sandbox: cpu_time 90: a number without a unit; write "90s" for seconds`}},
		{"a bad duration", "[sandbox]\ncpu_time = \"90 seconds\"",
			[]string{`sandbox: cpu_time "90 seconds": want a duration such as "90s" or "10m", "0s" for the call's timeout (the default), or "none" (or -1) for no limit`}},
		{"a negative duration", "[sandbox]\ncpu_time = \"-5s\"", []string{`sandbox: cpu_time "-5s": a duration may not be negative`}},
		{"a negative integer duration", "[sandbox]\ncpu_time = -5", []string{`sandbox: cpu_time -5: a duration may not be negative`}},
		{"a list as a duration", "[sandbox]\ncpu_time = [1]", []string{`sandbox: cpu_time […]: want a duration`}},
		{"zero processes", "[sandbox]\nmax_processes = 0",
			[]string{`sandbox: max_processes 0: 0 allows nothing; leave the key out for the default (1024), or use "none" (or -1) for no limit`}},
		{"negative open files", "[sandbox]\nmax_open_files = -3", []string{`sandbox: max_open_files -3: a limit may not be negative`}},
		{"a count as a string", "[sandbox]\nmax_open_files = \"4096\"", []string{`sandbox: max_open_files "4096": ` + countHint + ` 1024, or "none" (or -1) for no limit`}},
		{"a count with a unit", "[sandbox]\nmax_processes = \"1K\"", []string{`sandbox: max_processes "1K": ` + countHint}},
		{"too many processes", "[sandbox]\nmax_processes = 4294967296", []string{`sandbox: max_processes 4294967296: too large; want at most 2147483647`}},
		{"patterns not a list", "[sandbox]\ndeny_read = \"*.key\"", []string{`sandbox: deny_read "*.key": want a list of patterns, such as ["secrets/**", "*.key"]`}},
		{"a pattern not a string", "[sandbox]\nallow = [\"ok\", 5]", []string{"sandbox: allow[1] 5: an integer, not a pattern; " + patternHint}},
		{"an empty pattern", "[sandbox]\ndeny_write = [\"\"]", []string{`sandbox: deny_write[0] "": an empty pattern; ` + patternHint}},
		{"a slash only", "[sandbox]\ndeny_write = [\"/\"]", []string{`sandbox: deny_write[0] "/": an empty pattern`}},
		{"a pattern leaving the workspace", "[sandbox]\ndeny_read = [\"ok\", \"../secrets\"]",
			[]string{`sandbox: deny_read[1] "../secrets": a pattern may not hold "..": the deny list covers the workspace only; ` + patternHint}},
		{"an unclosed bracket", "[sandbox]\ndeny_read = [\"[ab\"]", []string{`sandbox: deny_read[0] "[ab": not a valid glob`}},
		{"an unclosed brace", "[sandbox]\nallow = [\"{a,b\"]", []string{`sandbox: allow[0] "{a,b": not a valid glob`}},
		{"a trailing backslash", "[sandbox]\nallow = ['a\\']", []string{`sandbox: allow[0] "a\\": not a valid glob (an unclosed "[" or "{", or a "\" at the end)`}},
		{"env not a list", "[sandbox]\nenv = \"GOFLAGS\"", []string{`sandbox: env "GOFLAGS": want a list of variable names, such as ["GOFLAGS", "NODE_OPTIONS"]`}},
		{"an env name not a string", "[sandbox]\nenv = [\"A\", 1]", []string{`sandbox: env[1] 1: an integer, not a variable name`}},
		{"an env assignment", "[sandbox]\nenv = [\"A=1\"]", []string{`sandbox: env[0]: "A=1" is not a variable name`}},
		{"an env pattern", "[sandbox]\nenv = [\"OK\", \"NODE_*\", \"\"]", []string{`sandbox: env[1]: "NODE_*" is not a variable name`, `sandbox: env[2]: an empty name`}},
		{"every bad value is named", "[sandbox]\nmemory = \"lots\"\ncpu_time = \"long\"\ndeny_read = [\"..\", \"a/../b\"]\nbogus = 1",
			[]string{`sandbox: memory "lots"`, `sandbox: cpu_time "long"`, `sandbox: deny_read[0] ".."`, `sandbox: deny_read[1] "a/../b"`, "unknown setting sandbox.bogus"}},
		{"beside another table's error", "model = \"x\"\n[sandbox]\nmemory = 0", []string{`model "x"`, "sandbox: memory 0"}},
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

func TestLoadNamesTheFileAndTheSandboxKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte("[sandbox]\ndeny_read = [\"../x\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+`: sandbox: deny_read[0] "../x": a pattern may not hold ".."`) {
		t.Errorf("error %v, want one naming %s, the table, the key and the pattern", err, p)
	}
}

func TestParseReadsTheMCPTable(t *testing.T) {
	f, err := Parse(`
[mcp.servers.github]
command = "github-mcp-server"
args    = ["stdio"]
env     = { GITHUB_PERSONAL_ACCESS_TOKEN = "$GITHUB_TOKEN" }
dir     = "/srv"
trusted = true

[mcp.servers.docs]
url           = "http://127.0.0.1:8931/mcp"
headers       = { Authorization = "Bearer $DOCS_TOKEN" }
start_timeout = "5s"
call_timeout  = "2m"
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]MCPServer{
		"github": {Command: "github-mcp-server", Args: []string{"stdio"}, Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "$GITHUB_TOKEN"}, Dir: "/srv", Trusted: true},
		"docs":   {URL: "http://127.0.0.1:8931/mcp", Headers: map[string]string{"Authorization": "Bearer $DOCS_TOKEN"}, StartTimeout: 5 * time.Second, CallTimeout: 2 * time.Minute},
	}
	if !reflect.DeepEqual(f.MCP.Servers, want) {
		t.Errorf("got  %+v\nwant %+v", f.MCP.Servers, want)
	}
	if _, err := Parse("[mcp.servers.x]\ncomand = \"srv\""); err == nil || !strings.Contains(err.Error(), "mcp.servers.x.comand") {
		t.Errorf("a misspelt key: error %v, want one naming mcp.servers.x.comand", err)
	}
}
