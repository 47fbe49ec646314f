package llm

import "encoding/json"

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Schema is the JSON Schema of the tool's input object.
	Schema json.RawMessage `json:"schema"`
	// Builtin names a provider-defined tool: the provider runs it itself
	// and sends its calls and results back as blocks of the response,
	// which adapters keep as opaque parts and replay as returned. An
	// adapter sends the provider's own definition instead of Schema, and
	// leaves out a builtin its protocol has not.
	Builtin Builtin `json:"builtin,omitempty"`
}

// Builtin is a provider-defined tool.
type Builtin string

// Provider-defined tools.
const (
	// BuiltinWebSearch is the provider's web search: OpenAI Responses
	// {"type":"web_search"}, Anthropic's web_search server tool.
	BuiltinWebSearch Builtin = "web_search"
)

// ToolChoice tells the model whether it may call tools.
type ToolChoice string

// Tool choices.
const (
	ToolChoiceAuto ToolChoice = "auto"
	// ToolChoiceNone keeps the definitions but forbids calls. An adapter
	// whose provider cannot express it omits the tools instead.
	ToolChoiceNone     ToolChoice = "none"
	ToolChoiceRequired ToolChoice = "required"
)

// Phase says which part of a turn a request belongs to.
type Phase string

// Phases of a turn.
const (
	PhaseExplore Phase = "explore"
	PhaseSettle  Phase = "settle"
	PhaseFinal   Phase = "final"
	// PhaseCompact is the model call that writes a handoff summary
	// (guard.History.Summarize). It is not a round of the turn: it is not
	// counted against the round budgets, only its usage is.
	PhaseCompact Phase = "compact"
)

// Request is one model call.
type Request struct {
	// Model is the provider's model name; adapters fill their own default.
	Model string
	// System is the system prompt, byte-stable for the whole turn.
	System string
	// History and Items are what the request sends, oldest first: the
	// items of History, then those of Items. Read them through Len, At and
	// All, which see both. The engine shares its slices: implementations
	// must not modify or retain them beyond the call.
	//
	// History is the thread's context before the turn, read only, held
	// apart so that a turn on a long thread does not copy it into the
	// turn's own slice. The engine fills it only for a model that says it
	// reads it (HistoryReader); every other model gets the whole context
	// in Items and an empty History.
	History []Item
	Items   []Item

	Tools      []ToolSpec
	ToolChoice ToolChoice
	// ForceTool names the one tool the model must call; it wins over
	// ToolChoice. Adapters in text tool mode, which cannot force a call,
	// leave it to the prompt.
	ForceTool string
	// Output asks for the answer's text as JSON matching a schema, in the
	// provider's own way (OutputNative); an adapter whose protocol has
	// none ignores it (its model's mode is OutputTool).
	Output *Output
	// MaxOutputTokens caps the output of this call; 0 means the provider's
	// default.
	MaxOutputTokens int
	Temperature     *float64
	// ParallelCalls allows several calls in one response where the provider
	// lets the client say so.
	ParallelCalls bool

	// TurnID, Round and Phase identify the request for tracing and for
	// scripted models that check what they receive.
	TurnID string
	Round  int
	Phase  Phase
}
