package provider

import (
	"slices"
	"strings"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
)

// ReplayRule says how a model's reasoning goes back to it on later rounds
// (DESIGN §2.1, §6).
type ReplayRule string

// Replay rules.
const (
	// ReplayNone: the model returns no reasoning to send back.
	ReplayNone ReplayRule = "none"
	// ReplayEncrypted: Responses reasoning items with encrypted_content go
	// back beside the calls they preceded (store:false).
	ReplayEncrypted ReplayRule = "encrypted"
	// ReplaySigned: Anthropic thinking blocks with their signatures go back
	// unchanged on a turn that used tools.
	ReplaySigned ReplayRule = "signed"
	// ReplayToolTurn: Chat reasoning fields (DeepSeek reasoning_content) go
	// back on the current turn's assistant messages with calls, and are
	// dropped from earlier turns.
	ReplayToolTurn ReplayRule = "tool-turn"
	// ReplayInline: reasoning is written inline as <think> blocks and goes
	// back as part of the raw text.
	ReplayInline ReplayRule = "inline"
)

// Capabilities is what is known about a model. A number that is a guess
// is listed in Estimated, by its field name (config.Fields).
type Capabilities struct {
	// ContextWindow is the input plus output tokens the model accepts.
	ContextWindow int `json:"context_window"`
	// MaxOutput is the most output tokens one call may produce.
	MaxOutput int `json:"max_output"`
	// NativeTools says the provider takes tool definitions and returns
	// calls in its own structure; without it rein drives the model in text
	// tool mode.
	NativeTools bool `json:"native_tools"`
	// ParallelCalls says the model may make several calls in one response.
	ParallelCalls   bool       `json:"parallel_calls"`
	ReasoningReplay ReplayRule `json:"reasoning_replay"`
	// WebSearch says the provider runs a web search of its own for the
	// model, offered as a provider-defined tool (llm.BuiltinWebSearch):
	// built-in OpenAI models through the Responses protocol and built-in
	// Anthropic models through Anthropic's; a config may say otherwise.
	WebSearch bool `json:"web_search"`
	// Price is nil when unknown; a cost budget then cannot be enforced.
	Price *llm.Price `json:"price,omitempty"`
	// Estimated lists the fields above that are guesses.
	Estimated []string `json:"estimated,omitempty"`
	// Source says where the values come from: "built-in", "config" or
	// "default" (nothing known about the model).
	Source string `json:"source"`
}

// IsEstimated reports whether field (a config.Fields name) is a guess.
func (c *Capabilities) IsEstimated(field string) bool { return slices.Contains(c.Estimated, field) }

// LoopPrice returns the price for loop.Options.Price: the zero price when
// unknown.
func (c *Capabilities) LoopPrice() llm.Price {
	if c.Price == nil {
		return llm.Price{}
	}
	return *c.Price
}

func (c *Capabilities) estimate(fields ...string) {
	for _, f := range fields {
		if !c.IsEstimated(f) {
			c.Estimated = append(c.Estimated, f)
		}
	}
}

func (c *Capabilities) known(fields ...string) {
	c.Estimated = slices.DeleteFunc(c.Estimated, func(f string) bool { return slices.Contains(fields, f) })
}

// apply overlays configured values: each field given is no longer a guess,
// unless the configuration says it is.
func (c *Capabilities) apply(o config.Capabilities) {
	var set []string
	if o.ContextWindow != nil {
		c.ContextWindow = *o.ContextWindow
		set = append(set, "context_window")
	}
	if o.MaxOutput != nil {
		c.MaxOutput = *o.MaxOutput
		set = append(set, "max_output")
	}
	if o.NativeTools != nil {
		c.NativeTools = *o.NativeTools
		set = append(set, "native_tools")
	}
	if o.ParallelCalls != nil {
		c.ParallelCalls = *o.ParallelCalls
		set = append(set, "parallel_calls")
	}
	if o.WebSearch != nil {
		c.WebSearch = *o.WebSearch
		set = append(set, "web_search")
	}
	if o.ReasoningReplay != nil {
		c.ReasoningReplay = ReplayRule(*o.ReasoningReplay)
		set = append(set, "reasoning_replay")
	}
	if o.Price != nil {
		c.Price = &llm.Price{InputPerM: o.Price.InputPerM, OutputPerM: o.Price.OutputPerM, CachedPerM: o.Price.CachedPerM}
		set = append(set, "price")
	}
	if len(set) == 0 && len(o.Estimated) == 0 {
		return
	}
	c.known(set...)
	c.estimate(o.Estimated...)
	c.Source = "config"
}

// KnownModel is a row of the built-in table.
type KnownModel struct {
	// Family is the vendor whose model it is: "openai", "anthropic" or
	// "deepseek"; it decides which providers list the model.
	Family string
	Name   string
	Caps   Capabilities
}

func price(in, out, cached float64) *llm.Price {
	return &llm.Price{InputPerM: in, OutputPerM: out, CachedPerM: cached}
}

// knownModels is the built-in table: published limits and list prices
// per million tokens in US dollars, as the vendors documented them when the
// table was written. Prices change; the config file overrides any row, and
// a value not checked against a vendor page is listed in Estimated.
var knownModels = []KnownModel{
	{"openai", "gpt-5", Capabilities{ContextWindow: 400_000, MaxOutput: 128_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayEncrypted, Price: price(1.25, 10, 0.125)}},
	{"openai", "gpt-5-mini", Capabilities{ContextWindow: 400_000, MaxOutput: 128_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayEncrypted, Price: price(0.25, 2, 0.025)}},
	{"openai", "gpt-5-nano", Capabilities{ContextWindow: 400_000, MaxOutput: 128_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayEncrypted, Price: price(0.05, 0.40, 0.005)}},
	{"openai", "gpt-4.1", Capabilities{ContextWindow: 1_047_576, MaxOutput: 32_768, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: price(2, 8, 0.50)}},
	{"openai", "gpt-4.1-mini", Capabilities{ContextWindow: 1_047_576, MaxOutput: 32_768, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: price(0.40, 1.60, 0.10)}},
	{"openai", "gpt-4o", Capabilities{ContextWindow: 128_000, MaxOutput: 16_384, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: price(2.50, 10, 1.25)}},
	{"openai", "gpt-4o-mini", Capabilities{ContextWindow: 128_000, MaxOutput: 16_384, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: price(0.15, 0.60, 0.075)}},
	{"openai", "o3", Capabilities{ContextWindow: 200_000, MaxOutput: 100_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayEncrypted, Price: price(2, 8, 0.50)}},
	{"openai", "o4-mini", Capabilities{ContextWindow: 200_000, MaxOutput: 100_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayEncrypted, Price: price(1.10, 4.40, 0.275)}},
	{"anthropic", "claude-sonnet-4-5", Capabilities{ContextWindow: 200_000, MaxOutput: 64_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplaySigned, Price: price(3, 15, 0.30)}},
	{"anthropic", "claude-haiku-4-5", Capabilities{ContextWindow: 200_000, MaxOutput: 64_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplaySigned, Price: price(1, 5, 0.10)}},
	{"anthropic", "claude-opus-4-1", Capabilities{ContextWindow: 200_000, MaxOutput: 32_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplaySigned, Price: price(15, 75, 1.50)}},
	{"anthropic", "claude-opus-4-5", Capabilities{ContextWindow: 200_000, MaxOutput: 64_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplaySigned, Price: price(5, 25, 0.50),
		Estimated: []string{"max_output", "price"}}},
	{"anthropic", "claude-sonnet-4", Capabilities{ContextWindow: 200_000, MaxOutput: 64_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplaySigned, Price: price(3, 15, 0.30)}},
	// DeepSeek has repriced with each model version; the prices are those
	// of V3.2 and may be stale.
	{"deepseek", "deepseek-chat", Capabilities{ContextWindow: 128_000, MaxOutput: 8_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: price(0.28, 0.42, 0.028),
		Estimated: []string{"parallel_calls", "price"}}},
	{"deepseek", "deepseek-reasoner", Capabilities{ContextWindow: 128_000, MaxOutput: 64_000, NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayToolTurn, Price: price(0.28, 0.42, 0.028),
		Estimated: []string{"parallel_calls", "price"}}},
}

// KnownModels returns the built-in table.
func KnownModels() []KnownModel {
	out := make([]KnownModel, len(knownModels))
	for i, m := range knownModels {
		m.Caps.Estimated = slices.Clone(m.Caps.Estimated)
		m.Caps.Source = "built-in"
		out[i] = m
	}
	return out
}

// lookupKnown finds a model of the table by name: exactly, or as a dated or
// suffixed variant ("gpt-5-mini-2025-08-07", "claude-sonnet-4-5-20250929"),
// or behind a router's vendor prefix ("openai/gpt-5"). The longest matching
// name wins, so gpt-5-mini is not taken for gpt-5.
func lookupKnown(model string) (KnownModel, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best := -1
	for i, k := range knownModels {
		if m != k.Name && !strings.HasPrefix(m, k.Name+"-") && !strings.HasPrefix(m, k.Name+"@") {
			continue
		}
		if best < 0 || len(k.Name) > len(knownModels[best].Name) {
			best = i
		}
	}
	if best < 0 {
		return KnownModel{}, false
	}
	k := knownModels[best]
	k.Caps.Estimated = slices.Clone(k.Caps.Estimated)
	k.Caps.Source = "built-in"
	return k, true
}

// defaultCapabilities is what rein assumes about a model it knows nothing
// of, speaking protocol: every value a guess, the price unknown.
func defaultCapabilities(protocol string) Capabilities {
	c := Capabilities{ContextWindow: 128_000, MaxOutput: 8_192, NativeTools: true, ParallelCalls: true, Source: "default"}
	switch protocol {
	case "openai":
		c.ReasoningReplay = ReplayEncrypted
	case "anthropic":
		c.ReasoningReplay = ReplaySigned
	default:
		c.ReasoningReplay = ReplayToolTurn
	}
	c.estimate("context_window", "max_output", "native_tools", "parallel_calls", "reasoning_replay", "price")
	return c
}

// withToolMode reconciles capabilities with a tool mode: text mode means
// no native tools, and a model without native tools runs in text mode.
func withToolMode(c Capabilities, mode string) (Capabilities, string) {
	switch {
	case mode == config.ToolModeText:
		c.NativeTools = false
		c.known("native_tools")
		// A provider-defined tool is offered natively or not at all.
		c.WebSearch = false
	case !c.NativeTools:
		mode = config.ToolModeText
	case mode == "":
		mode = config.ToolModeNative
	}
	return c, mode
}

// capabilitiesFor combines, from weakest to strongest: the defaults for the
// protocol, the built-in table, the provider's configured capabilities and
// the model's.
func capabilitiesFor(protocol, model string, layers ...config.Capabilities) Capabilities {
	c := defaultCapabilities(protocol)
	if k, ok := lookupKnown(model); ok {
		c = k.Caps
		// OpenAI's Chat Completions return no reasoning to replay.
		if protocol == "openai-chat" && c.ReasoningReplay == ReplayEncrypted {
			c.ReasoningReplay = ReplayNone
		}
		// The vendor's own search, through the vendor's own protocol.
		c.WebSearch = k.Family == "openai" && protocol == "openai" || k.Family == "anthropic" && protocol == "anthropic"
	}
	for _, l := range layers {
		c.apply(l)
	}
	return c
}
