// Package config reads rein's configuration file (DESIGN §13):
// $XDG_CONFIG_HOME/rein/config.toml, or ~/.config/rein/config.toml.
//
// The file names providers beyond the built-in ones — any OpenAI-compatible
// or Anthropic-compatible server with its base URL, the environment variable
// holding its key, its wire protocol and tool mode — and overrides what is
// known about models: context window, output limit, tool support, reasoning
// replay and prices. A configured provider is used as --model NAME:MODEL.
//
//	# The model used when --model is not given.
//	model = "local:qwen3-coder"
//
//	[providers.local]
//	protocol  = "openai-chat"              # openai, openai-chat or anthropic
//	base_url  = "http://127.0.0.1:8080/v1"
//	key_env   = "LOCAL_API_KEY"            # leave out for a server without keys
//	tool_mode = "text"                     # native (default) or text
//
//	[providers.local.models."qwen3-coder"]
//	context_window = 262144
//	max_output     = 65536
//	price          = { input_per_m = 0, output_per_m = 0 }
//
//	# Overrides for a built-in provider's model.
//	[models."openai:gpt-5-mini"]
//	price = { input_per_m = 0.25, output_per_m = 2.0, cached_per_m = 0.025 }
//
// The package only reads and checks the file; package provider decides what
// it means.
package config

import "github.com/reinhq/rein/tools/mcp"

// File is the parsed configuration file.
type File struct {
	// Model is the model spec ("provider:model") used when none is given.
	Model string `toml:"model"`
	// Providers are named providers, usable as NAME:MODEL.
	Providers map[string]Provider `toml:"providers"`
	// Models overrides the capabilities of models of built-in providers,
	// keyed by "provider:model".
	Models map[string]Capabilities `toml:"models"`
	// MCP configures MCP servers, whose tools are offered as deferred
	// tools (a manifest line each, loaded with load_tools).
	MCP MCP `toml:"mcp"`

	// Path is where the file was read from; empty when there was none.
	Path string `toml:"-"`
}

// MCP is the [mcp] table: servers by name, each as in mcp.ServerConfig
// ([mcp.servers.NAME] with command/args/env or url/headers, start_timeout,
// call_timeout, trusted).
type MCP struct {
	Servers map[string]mcp.ServerConfig `toml:"servers"`
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
	// Capabilities apply to every model of the provider; Models override
	// them per model.
	Capabilities Capabilities `toml:"capabilities"`
	// Models lists the provider's models, keyed by model name.
	Models map[string]Capabilities `toml:"models"`
}

// Capabilities overrides what is known about a model. Unset fields keep
// the built-in value.
type Capabilities struct {
	ContextWindow *int  `toml:"context_window"`
	MaxOutput     *int  `toml:"max_output"`
	NativeTools   *bool `toml:"native_tools"`
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

// Fields are the capability names Capabilities.Estimated may list.
var Fields = []string{"context_window", "max_output", "native_tools", "parallel_calls", "reasoning_replay", "price"}
