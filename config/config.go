// Package config reads rein's configuration file (DESIGN §13):
// $XDG_CONFIG_HOME/rein/config.toml, or ~/.config/rein/config.toml.
//
// The file names providers beyond the built-in ones — any OpenAI-compatible
// or Anthropic-compatible server with its base URL, the environment variable
// holding its key, its wire protocol and tool mode — overrides what is
// known about models (context window, output limit, tool support, reasoning
// replay and prices) and sets what is sent with every request to them
// (thinking, reasoning effort, prompt caching, extra fields, headers). A
// configured provider is used as --model NAME:MODEL.
//
//	# The model used when --model is not given.
//	model = "local:qwen3-coder"
//
//	[providers.local]
//	protocol         = "openai-chat"              # openai, openai-chat or anthropic
//	base_url         = "http://127.0.0.1:8080/v1"
//	key_env          = "LOCAL_API_KEY"            # leave out for a server without keys
//	tool_mode        = "text"                     # native (default) or text
//	reasoning_effort = "high"                     # request settings for every model
//	headers          = { "X-Title" = "rein" }
//	extra            = { chat_template_kwargs = { enable_thinking = true } }
//
//	[providers.local.models."qwen3-coder"]
//	context_window   = 262144
//	max_output       = 65536
//	price            = { input_per_m = 0, output_per_m = 0 }
//	reasoning_effort = "medium"                   # the model's settings win
//
//	[providers.claude]
//	protocol        = "anthropic"
//	key_env         = "ANTHROPIC_API_KEY"
//	thinking_budget = 8000
//	prompt_cache    = true
//
//	# Overrides for a built-in provider's model.
//	[models."openai:gpt-5-mini"]
//	price = { input_per_m = 0.25, output_per_m = 2.0, cached_per_m = 0.025 }
//	reasoning_effort = "low"
//
//	# Defaults for every model of a provider: the model name "*".
//	[models."anthropic:*"]
//	prompt_cache = true
//
// # Request settings
//
// A provider table ([providers.NAME]) and a model table
// ([providers.NAME.models.MODEL], [models."PROVIDER:MODEL"] and
// [models."PROVIDER:*"]) may hold request settings beside the other keys.
// Each protocol takes only its own (RequestProtocols); another's is an
// error, not silently ignored:
//
//	setting             protocols            value
//	thinking_budget     anthropic            extended thinking budget in tokens: 0 (off) or at least 1024
//	prompt_cache        anthropic            mark prompt-cache breakpoints: true or false
//	max_tokens          anthropic            max_tokens when --max-output is not given: positive
//	reasoning_effort    openai, openai-chat  none, minimal, low, medium, high, xhigh or max (which a model takes is the provider's to say)
//	parallel_tool_calls all                  false asks for one call per response (parallel_tool_calls, Anthropic's disable_parallel_tool_use); default true
//	reasoning_summary   openai               the Responses reasoning summary: auto, concise or detailed
//	store               openai               keep responses on the server (store:true)
//	token_param         openai-chat          the output cap's field: max_tokens or max_completion_tokens
//	stream_usage        openai-chat          false leaves out stream_options.include_usage
//	extra               openai, openai-chat  extra top-level request fields: a table of any values
//	headers             openai, openai-chat  HTTP headers added to every request: a table of strings
//	idle_timeout        all                  the longest silence of the server (before its headers, between two reads): a duration, default "5m"
//	output_mode         openai, openai-chat  how a structured answer (rein run --schema) is asked for: native (the JSON Schema response format) or tool (a forced tool call, for servers without the format); default native, tool for deepseek
//
// extra may not replace the fields rein writes itself (ReservedExtra).
//
// The layers, weakest first: [providers.NAME], [models."NAME:*"],
// [providers.NAME.models.MODEL], [models."NAME:MODEL"]. A setting given in
// a later layer replaces an earlier one; extra and headers are merged key by
// key, a later layer's key replacing the same key before it. The "*" model
// name applies to every model of the provider, capabilities included; it is
// how a built-in provider gets defaults, since [providers.NAME] may not
// reuse a built-in name.
//
// # The sandbox
//
// The [sandbox] table (Sandbox) sets the resource limits of the commands
// exec and code_execution run, and changes the workspace's deny list,
// which the file tools and the commands follow (package sandbox):
//
//	[sandbox]
//	memory         = "4GiB"    # per process; "none" (or -1) for no limit
//	cpu_time       = "10m"     # per process; "0s" is the call's timeout, "none" no limit
//	max_processes  = 2048      # at once; counted inside bubblewrap only
//	max_file_size  = "512MiB"
//	max_open_files = 4096
//	deny_read      = ["secrets/**", "*.key"]  # neither read nor written, beside the defaults
//	deny_write     = ["Makefile"]             # read but not written, beside the defaults
//	allow          = ["**/.env.example"]      # exempt; a default pattern listed here is removed
//	env            = ["GOFLAGS", "NODE_OPTIONS"]  # variables commands see, beside the defaults
//
// Commands see only PATH, HOME, LANG, LC_*, TERM, TZ, USER, SHELL and
// TMPDIR of rein's environment (sandbox.CommandEnvNames), plus the names
// env lists: each one exact variable name, passed whatever it holds.
//
// A key left out keeps the default (sandbox.Limits, sandbox.DenyRules). A
// size is a whole number of bytes, or a string of a number and a unit:
// K, M, G or T, in any case, alone or followed by B or iB, is a power of
// 1024 — "100KB" is 102400 bytes, "2G" and "2GiB" the same — since the
// limits are of memory and files, which are counted that way; B is bytes,
// and a fraction ("1.5GiB") is rounded down to a whole byte. A duration is
// a Go duration ("90s", "1m30s"); CPU time is counted in whole seconds,
// rounded up. A pattern is a doublestar glob relative to the workspace
// root, as sandbox.DenyRules describes.
//
// The package only reads and checks the file; package provider decides what
// it means. A table of a built-in provider is checked against its protocol
// by package provider, which knows the built-in providers.
//
// # Model streams
//
// The [stream] table (Stream) caps what one model call may send; over a
// cap the stream is cut and the turn ends output_capped:
//
//	[stream]
//	max_round_output   = "4MiB"  # text, reasoning and calls of one model call
//	max_call_arguments = "1MiB"  # the arguments of one call
//
// Sizes are written as in [sandbox]; "none" (or -1) is no cap.
//
// # Web search
//
// The [web_search] table (WebSearch) chooses the search API web_search
// uses for models without a search of their own: backend "searxng",
// "brave" or "tavily", url, and key_env, the environment variable that
// holds the key.
package config

import (
	"slices"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// File is the parsed configuration file.
type File struct {
	// Model is the model spec ("provider:model") used when none is given.
	Model string `toml:"model"`
	// Providers are named providers, usable as NAME:MODEL.
	Providers map[string]Provider `toml:"providers"`
	// Models overrides the capabilities and request settings of models,
	// keyed by "provider:model"; "provider:*" applies to all the provider's
	// models.
	Models map[string]Model `toml:"models"`
	// MCP configures MCP servers, whose tools are offered as deferred
	// tools (a manifest line each, loaded with load_tools).
	MCP MCP `toml:"mcp"`
	// Sandbox sets the limits of commands and changes the deny list.
	Sandbox Sandbox `toml:"sandbox"`
	// Stream caps what one model call may send (see Stream).
	Stream Stream `toml:"stream"`
	// WebSearch is the search API of web_search (see WebSearch).
	WebSearch WebSearch `toml:"web_search"`

	// Path is where the file was read from; empty when there was none.
	Path string `toml:"-"`
}

// MCP is the [mcp] table: servers by name ([mcp.servers.NAME]).
type MCP struct {
	Servers map[string]MCPServer `toml:"servers"`
}

// MCPServer is one [mcp.servers.NAME] table. Its fields are those of
// tools/mcp.ServerConfig, in the same order, so the command converts one
// to the other (mcp.ServerConfig(s)) and the compiler keeps the two alike;
// the file is read without linking the MCP client. tools/mcp checks the
// values when the server starts.
type MCPServer struct {
	// Name is the table's key; the command sets it.
	Name string `toml:"name"`

	// Command and Args start a stdio server; Env is added to its
	// environment ($VAR and ${VAR} expanded from rein's), Dir is its
	// working directory.
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	Dir     string            `toml:"dir"`

	// URL is the endpoint of a streamable HTTP server; Headers are sent
	// with every request, expanded like Env.
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`

	// StartTimeout bounds starting the server, CallTimeout one tool call
	// (zero: tools/mcp's defaults).
	StartTimeout time.Duration `toml:"start_timeout"`
	CallTimeout  time.Duration `toml:"call_timeout"`
	// Trusted tools run without asking the user (see tools/mcp).
	Trusted bool `toml:"trusted"`
}

// Sandbox is the [sandbox] table. Its limits mean what sandbox.Limits'
// fields mean: 0 is the default (for CPUTime, the call's timeout) and
// NoLimit is no limit. The deny lists are doublestar patterns, added to
// the defaults of sandbox.DenyRules (Allow exempts paths from them).
type Sandbox struct {
	// Memory is the bytes each process may allocate (sandbox.Limits.Memory).
	Memory int64 `toml:"memory"`
	// CPUTime is the processor time each process may use.
	CPUTime time.Duration `toml:"cpu_time"`
	// MaxProcesses is how many processes and threads a command may run at
	// once, inside bubblewrap.
	MaxProcesses int `toml:"max_processes"`
	// MaxFileSize is the largest file a process may write, in bytes.
	MaxFileSize int64 `toml:"max_file_size"`
	// MaxOpenFiles is how many files each process may have open.
	MaxOpenFiles int `toml:"max_open_files"`
	// DenyRead are paths neither read nor written.
	DenyRead []string `toml:"deny_read"`
	// DenyWrite are paths read but not written.
	DenyWrite []string `toml:"deny_write"`
	// Allow are paths exempt from the deny list, defaults included.
	Allow []string `toml:"allow"`
	// Env are the names of further variables of rein's environment that
	// commands see (sandbox.Options.Env).
	Env []string `toml:"env"`

	// errs are what UnmarshalTOML found wrong, reported by check.
	errs []error
}

// NoLimit is the value of a [sandbox] limit set to "none" (or -1).
const NoLimit = -1

// SandboxKeys are the settings of the [sandbox] table.
var SandboxKeys = []string{"memory", "cpu_time", "max_processes", "max_file_size", "max_open_files", "deny_read", "deny_write", "allow", "env"}

// Options returns the table as package sandbox takes it, for
// sandbox.OpenOptions (Deny) and sandbox.NewRunnerOptions (Limits).
func (s *Sandbox) Options() sandbox.Options {
	return sandbox.Options{
		Limits: sandbox.Limits{
			Memory:    s.Memory,
			CPU:       s.CPUTime,
			Procs:     s.MaxProcesses,
			FileSize:  s.MaxFileSize,
			OpenFiles: s.MaxOpenFiles,
		},
		Deny: sandbox.DenyRules{
			Read:  slices.Clone(s.DenyRead),
			Write: slices.Clone(s.DenyWrite),
			Allow: slices.Clone(s.Allow),
		},
		Env: slices.Clone(s.Env),
	}
}

// LimitsSet returns the names of the limits the table gives, in
// SandboxKeys' order; cpu_time "0s" is the default, so it is not named.
func (s *Sandbox) LimitsSet() []string {
	var names []string
	for _, l := range []struct {
		name string
		set  bool
	}{
		{"memory", s.Memory != 0},
		{"cpu_time", s.CPUTime != 0},
		{"max_processes", s.MaxProcesses != 0},
		{"max_file_size", s.MaxFileSize != 0},
		{"max_open_files", s.MaxOpenFiles != 0},
	} {
		if l.set {
			names = append(names, l.name)
		}
	}
	return names
}

// Provider is a named provider.
type Provider struct {
	// Protocol is the wire protocol: "openai" (Responses API),
	// "openai-chat" (Chat Completions) or "anthropic" (Messages).
	Protocol string `toml:"protocol"`
	// BaseURL is the API root as the official SDKs take it
	// (http://127.0.0.1:8080/v1 for OpenAI-style servers, Anthropic's
	// without /v1). Required for openai-chat.
	BaseURL string `toml:"base_url"`
	// KeyEnv names the environment variable holding the API key. Empty
	// means the server needs no key.
	KeyEnv string `toml:"key_env"`
	// ToolMode is "native" (the default) or "text": tools described in the
	// system prompt and calls parsed from text, for servers without native
	// function calling.
	ToolMode string `toml:"tool_mode"`
	// Request settings apply to every model of the provider; a model's
	// table overrides them.
	Request
	// Capabilities apply to every model of the provider; Models override
	// them per model.
	Capabilities Capabilities `toml:"capabilities"`
	// Models lists the provider's models, keyed by model name.
	Models map[string]Model `toml:"models"`
}

// Model is a model's table: what is known about it and what is sent with
// every request to it, side by side in one table.
type Model struct {
	Capabilities
	Request
}

// Capabilities overrides what is known about a model. Unset fields keep
// the built-in value.
type Capabilities struct {
	ContextWindow *int  `toml:"context_window"`
	MaxOutput     *int  `toml:"max_output"`
	NativeTools   *bool `toml:"native_tools"`
	// WebSearch says the provider runs a web search of its own for the
	// model (OpenAI Responses web_search, Anthropic's web search tool),
	// which web_search then uses instead of the [web_search] backend.
	WebSearch     *bool `toml:"web_search"`
	ParallelCalls *bool `toml:"parallel_calls"`
	// ReasoningReplay is how reasoning goes back to the model: "none",
	// "encrypted", "signed", "tool-turn" or "inline" (see package provider).
	ReasoningReplay *string `toml:"reasoning_replay"`
	// Price replaces the model's price as a whole.
	Price *Price `toml:"price"`
	// Estimated names the fields given here that are guesses
	// ("context_window", "max_output", "native_tools", "parallel_calls",
	// "reasoning_replay", "price").
	Estimated []string `toml:"estimated"`
}

// Request holds settings sent with every request to a model. Unset fields
// leave the adapter's default; each field is taken by the protocols
// RequestProtocols names for it.
type Request struct {
	// ThinkingBudget enables Anthropic extended thinking with this many
	// tokens (at least 1024); 0 turns it off.
	ThinkingBudget *int `toml:"thinking_budget" json:"thinking_budget,omitempty"`
	// PromptCache marks Anthropic prompt-cache breakpoints.
	PromptCache *bool `toml:"prompt_cache" json:"prompt_cache,omitempty"`
	// MaxTokens is Anthropic's max_tokens when a call sets no output cap
	// (--max-output).
	MaxTokens *int `toml:"max_tokens" json:"max_tokens,omitempty"`
	// ReasoningEffort is one of ReasoningEfforts (OpenAI protocols).
	ReasoningEffort *string `toml:"reasoning_effort" json:"reasoning_effort,omitempty"`
	// ParallelToolCalls false asks the model for at most one call per
	// response; unset leaves rein's default, parallel calls allowed.
	ParallelToolCalls *bool `toml:"parallel_tool_calls" json:"parallel_tool_calls,omitempty"`
	// ReasoningSummary is one of ReasoningSummaries (the Responses API).
	ReasoningSummary *string `toml:"reasoning_summary" json:"reasoning_summary,omitempty"`
	// Store keeps responses on the server (the Responses API).
	Store *bool `toml:"store" json:"store,omitempty"`
	// TokenParam is one of TokenParams: the Chat Completions field that
	// caps output tokens (by default chosen by model name).
	TokenParam *string `toml:"token_param" json:"token_param,omitempty"`
	// StreamUsage false leaves out stream_options.include_usage, for Chat
	// servers that reject it.
	StreamUsage *bool `toml:"stream_usage" json:"stream_usage,omitempty"`
	// Extra holds additional top-level request fields (OpenAI protocols),
	// such as vLLM's chat_template_kwargs or OpenRouter's provider.
	Extra map[string]any `toml:"extra" json:"extra,omitempty"`
	// Headers are HTTP headers added to every request (OpenAI protocols).
	Headers map[string]string `toml:"headers" json:"headers,omitempty"`
	// IdleTimeout is how long the provider may stay silent — before the
	// response's headers, or between two reads of its body — before the
	// call is cut with an llm.Timeout error (default 5 min; package
	// llm/transport).
	IdleTimeout *time.Duration `toml:"idle_timeout" json:"idle_timeout,omitempty"`
	// OutputMode is one of OutputModes: how a structured answer is asked
	// for (llm.OutputMode).
	OutputMode *string `toml:"output_mode" json:"output_mode,omitempty"`
}

// Price is a model's price per million tokens, in US dollars.
type Price struct {
	InputPerM  float64 `toml:"input_per_m"`
	OutputPerM float64 `toml:"output_per_m"`
	// CachedPerM is the price of cached input; 0 means the input price.
	CachedPerM float64 `toml:"cached_per_m"`
}

// Protocols are the wire protocols a configured provider may speak.
var Protocols = []string{"openai", "openai-chat", "anthropic"}

// Tool modes.
const (
	ToolModeNative = "native"
	ToolModeText   = "text"
)

// ReplayRules are the values of Capabilities.ReasoningReplay.
var ReplayRules = []string{"none", "encrypted", "signed", "tool-turn", "inline"}

// Values of the enumerated request settings.
var (
	// ReasoningEfforts are the values OpenAI's API takes; "none" turns
	// reasoning off on the models that allow it.
	// OutputModes are the values of output_mode (llm.OutputMode).
	OutputModes        = []string{"native", "tool"}
	ReasoningEfforts   = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}
	ReasoningSummaries = []string{"auto", "concise", "detailed"}
	TokenParams        = []string{"max_tokens", "max_completion_tokens"}
)

// MinThinkingBudget is the smallest thinking_budget Anthropic accepts.
const MinThinkingBudget = 1024

// RequestProtocols names, for each request setting, the protocols that
// take it.
var RequestProtocols = map[string][]string{
	"thinking_budget":     {"anthropic"},
	"prompt_cache":        {"anthropic"},
	"max_tokens":          {"anthropic"},
	"reasoning_effort":    {"openai", "openai-chat"},
	"parallel_tool_calls": {"openai", "openai-chat", "anthropic"},
	"reasoning_summary":   {"openai"},
	"store":               {"openai"},
	"token_param":         {"openai-chat"},
	"stream_usage":        {"openai-chat"},
	"extra":               {"openai", "openai-chat"},
	"headers":             {"openai", "openai-chat"},
	"idle_timeout":        {"openai", "openai-chat", "anthropic"},
	"output_mode":         {"openai", "openai-chat"},
}

// ReservedExtra are request fields rein writes itself on every call; extra
// may not replace them.
var ReservedExtra = []string{"model", "messages", "input", "instructions", "tools", "tool_choice", "stream"}

// Fields are the capability names Capabilities.Estimated may list.
var Fields = []string{"context_window", "max_output", "native_tools", "parallel_calls", "reasoning_replay", "price"}
