package openai

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/reinhq/rein/llm/transport"
)

// DefaultBaseURL is OpenAI's API root, used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Provider names carried in [llm.Opaque.Provider]: a payload is replayed only
// to the protocol that produced it.
const (
	ProviderChat      = "openai-chat"
	ProviderResponses = "openai-responses"
)

// TokenParam names the request field that caps output tokens in Chat
// Completions: OpenAI's reasoning models accept only max_completion_tokens,
// while many compatible servers know only max_tokens.
type TokenParam string

// Token limit parameter names.
const (
	MaxTokens           TokenParam = "max_tokens"
	MaxCompletionTokens TokenParam = "max_completion_tokens"
)

// Options configure an adapter. The zero value talks to api.openai.com with
// streaming on.
type Options struct {
	// APIKey is sent as a bearer token. Local servers accept any non-empty
	// value.
	APIKey string
	// BaseURL is the API root as the official SDK takes it, such as
	// http://127.0.0.1:8080/v1; the adapter appends /chat/completions or
	// /responses.
	BaseURL string
	// Model is the default model, used when a request names none.
	Model string
	// HTTPClient sends the requests; nil means a client of package
	// llm/transport. Either way Timeouts' header and idle bounds apply.
	HTTPClient *http.Client
	// Timeouts bound the call's HTTP phases (llm/transport; zero values
	// are the defaults: 30 s to connect and for TLS, 5 min for the
	// headers and between two reads of the body).
	Timeouts transport.Timeouts
	// NoStream asks for one JSON body instead of server-sent events. The
	// adapter produces the same events from it, all at the end.
	NoStream bool
	// Name identifies the provider in errors ("openai", "deepseek", …);
	// default "openai".
	Name string

	// TokenParam overrides the Chat Completions token limit field; empty
	// chooses by model name (see [TokenParamFor]).
	TokenParam TokenParam
	// NoStreamUsage omits stream_options.include_usage for Chat servers that
	// reject it.
	NoStreamUsage bool
	// ReasoningEffort is sent as reasoning_effort (Chat) or reasoning.effort
	// (Responses) when set: "none", "minimal", "low", "medium", "high",
	// "xhigh" (which a model takes is the provider's to say).
	ReasoningEffort string
	// ParallelToolCalls, when set, is sent as parallel_tool_calls with
	// every request that offers tools, over llm.Request.ParallelCalls:
	// false asks for at most one call per response.
	ParallelToolCalls *bool
	// ReasoningSummary is the Responses reasoning.summary setting ("auto",
	// "concise", "detailed"); empty sends none.
	ReasoningSummary string
	// Store keeps Responses server-side (store:true). By default responses
	// are not stored, so reasoning travels back as encrypted content.
	Store bool
	// Extra holds additional top-level request fields for compatible servers
	// (OpenRouter's "reasoning" or "usage", vLLM's "chat_template_kwargs").
	Extra map[string]any
	// Headers are added to every request, after the adapter's own.
	Headers map[string]string
	// Organization and Project are sent as OpenAI-Organization and
	// OpenAI-Project. For OpenAI's own API (an empty BaseURL or one under
	// api.openai.com/v1) they default to $OPENAI_ORG_ID and
	// $OPENAI_PROJECT_ID, as with the official SDK.
	Organization string
	Project      string

	// OutputTool asks for a structured answer (llm.Request.Output) with a
	// forced tool call rather than the protocol's own JSON Schema format
	// (Chat response_format, Responses text.format): for compatible
	// servers that do not take the format. The engine reads it through
	// the model's OutputMode.
	OutputTool bool

	// TextTools drives the model in text tool mode (DESIGN §5.2), for
	// servers without native function calling: tools are described in the
	// system prompt (Responses: the instructions), calls are parsed from
	// the text and replayed in the text format, and results go back as
	// user-role text. A Chat model also switches to it by itself when the
	// server answers a request with tools with an [llm.ToolsUnsupported]
	// error; a Responses model only when configured.
	TextTools bool
	// ToolsRefused is told, once, when a Chat model switches to text tool
	// mode because the server refused tool definitions, with the server's
	// error: a warning for the user, and a way to remember the switch for
	// later models of the same server. nil logs the warning with
	// slog.Default.
	ToolsRefused func(err error)
}

// toolsRefused reports the switch to text tool mode after err.
func (o *Options) toolsRefused(err error) {
	if o.ToolsRefused != nil {
		o.ToolsRefused(err)
		return
	}
	slog.Warn("the server refused tool definitions; using text tool mode from now on (set tool_mode = \"text\" in the config to skip the refused request)",
		"provider", o.name(), "model", o.Model, "err", err)
}

func (o *Options) name() string {
	if o.Name == "" {
		return "openai"
	}
	return o.Name
}

// TokenParamFor returns the token limit field a model accepts: OpenAI's
// reasoning models (o1, o3, o4, gpt-5 and later) reject max_tokens.
func TokenParamFor(model string) TokenParam {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "openai/gpt-5" through a router
	}
	switch {
	case len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9':
		return MaxCompletionTokens
	case strings.HasPrefix(m, "gpt-5"):
		return MaxCompletionTokens
	}
	return MaxTokens
}
