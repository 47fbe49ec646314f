package provider

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/llm/transport"
)

// Resolved is a model ready to use and what is known about it.
type Resolved struct {
	Spec Spec
	// Protocol is the wire protocol: "openai", "openai-chat", "anthropic"
	// or "scripted".
	Protocol string
	// BaseURL is the URL requests go to; empty means the SDK's default.
	BaseURL string
	// KeyEnv names the variable the key came from; empty for none.
	KeyEnv string
	// ToolMode is config.ToolModeNative or config.ToolModeText.
	ToolMode string
	// Caps are the model's capabilities; Caps.LoopPrice() is the price for
	// loop.Options.Price.
	Caps Capabilities
	// Request is what the config file sets for every request to the model,
	// merged from its tables (see package config); the model sends it.
	Request config.Request
	// Model is the model, wrapped with the retry policy of DESIGN §2.6
	// (except the scripted model: its errors are the test).
	Model llm.Model
}

// Open returns the model a spec names. It is Resolve without the rest.
func Open(s Spec, c Config) (llm.Model, error) {
	r, err := Resolve(s, c)
	if err != nil {
		return nil, err
	}
	return r.Model, nil
}

// Resolve finds the provider a spec names, built in or configured, and
// builds its model.
func Resolve(s Spec, c Config) (*Resolved, error) {
	f, err := c.file()
	if err != nil {
		return nil, err
	}
	r := &Resolved{Spec: s, ToolMode: config.ToolModeNative}
	if b, ok := builtins[s.Provider]; ok {
		r.Protocol = b.protocol
		r.KeyEnv = b.keyEnv
		r.BaseURL = c.BaseURL
		if r.BaseURL == "" && b.baseEnv != "" {
			r.BaseURL = c.getenv(b.baseEnv)
		}
		if r.BaseURL == "" {
			r.BaseURL = b.base
		}
	} else if p, ok := f.Providers[s.Provider]; ok {
		r.Protocol = p.Protocol
		r.KeyEnv = p.KeyEnv
		r.BaseURL = p.BaseURL
		if c.BaseURL != "" {
			r.BaseURL = c.BaseURL
		}
		if p.ToolMode != "" {
			r.ToolMode = p.ToolMode
		}
	} else {
		return nil, fmt.Errorf("model %s: unknown provider %q (%s)", s, s.Provider, knownNames(f))
	}

	if len(c.Request.Names()) > 0 {
		if err := c.Request.Check("the command line", r.Protocol); err != nil {
			return nil, fmt.Errorf("model %s: %w", s, err)
		}
	}
	if r.Protocol == "scripted" {
		m, err := scripted.Load(s.Model)
		if err != nil {
			return nil, fmt.Errorf("scripted model: %w", err)
		}
		r.Caps = Capabilities{NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: nil, Source: "built-in"}
		r.Model = m
		return r, nil
	}

	layers := layersFor(f, s.Provider, s.Model)
	r.Caps, r.ToolMode = withToolMode(capabilitiesFor(r.Protocol, s.Model, capLayers(layers)...), r.ToolMode)
	// The command line's settings are the strongest layer.
	r.Request = mergeRequests(append(layers, layer{at: "the command line", req: c.Request}))

	key := "none" // a placeholder for servers without keys: never another provider's key from the environment
	if c.APIKey != "" {
		key = c.APIKey
	} else if r.KeyEnv != "" {
		key = c.getenv(r.KeyEnv)
		if key == "" {
			return nil, fmt.Errorf("%s: %s is not set; export it (any non-empty value for a local server)", s, r.KeyEnv)
		}
	}
	switch r.Protocol {
	case "openai":
		r.Model = llm.WithRetry(openai.NewResponses(r.openaiOptions(key, c)), llm.RetryPolicy{})
		return r, nil
	case "openai-chat":
		o := r.openaiOptions(key, c)
		if _, refused := refusedTools.Load(refusedKey(r.BaseURL, s.Model)); refused && !o.TextTools {
			// Refused earlier in this process: not asked again.
			o.TextTools = true
			r.Caps, r.ToolMode = withToolMode(r.Caps, config.ToolModeText)
		}
		o.ToolsRefused = r.toolsRefused(c)
		r.Model = llm.WithRetry(openai.NewChat(o), llm.RetryPolicy{})
		return r, nil
	case "anthropic":
		m, err := anthropic.New(r.anthropicOptions(key, c))
		if err != nil {
			return nil, err
		}
		r.Model = llm.WithRetry(m, llm.RetryPolicy{})
		return r, nil
	}
	return nil, fmt.Errorf("%s: unknown protocol %q", s, r.Protocol)
}

// openaiOptions are the options of an OpenAI adapter (Responses or Chat)
// for r: where it goes, and the config file's request settings.
func (r *Resolved) openaiOptions(key string, c Config) openai.Options {
	o := openai.Options{APIKey: key, BaseURL: r.BaseURL, Model: r.Spec.Model, NoStream: c.NoStream, Name: r.Spec.Provider}
	o.TextTools = r.ToolMode == config.ToolModeText
	q := r.Request
	if q.ReasoningEffort != nil {
		o.ReasoningEffort = *q.ReasoningEffort
	}
	o.ParallelToolCalls = q.ParallelToolCalls
	if q.ReasoningSummary != nil {
		o.ReasoningSummary = *q.ReasoningSummary
	}
	if q.Store != nil {
		o.Store = *q.Store
	}
	if q.TokenParam != nil {
		o.TokenParam = openai.TokenParam(*q.TokenParam)
	}
	if q.StreamUsage != nil {
		o.NoStreamUsage = !*q.StreamUsage
	}
	// DeepSeek's API takes JSON output but no JSON Schema format.
	o.OutputTool = r.Spec.Provider == "deepseek"
	if q.OutputMode != nil {
		o.OutputTool = *q.OutputMode == "tool"
	}
	o.Extra = q.Extra
	o.Headers = q.Headers
	o.Timeouts = r.timeouts()
	return o
}

// timeouts are the HTTP bounds of r's calls: the defaults of package
// llm/transport, with the config file's idle_timeout as the longest
// silence before the headers and between two reads.
func (r *Resolved) timeouts() transport.Timeouts {
	var t transport.Timeouts
	if d := r.Request.IdleTimeout; d != nil {
		t.Idle, t.ResponseHeader = *d, *d
	}
	return t
}

// anthropicOptions are the options of the Anthropic adapter for r.
func (r *Resolved) anthropicOptions(key string, c Config) anthropic.Options {
	o := anthropic.Options{APIKey: key, BaseURL: r.BaseURL, Model: r.Spec.Model, DisableStreaming: c.NoStream,
		TextTools: r.ToolMode == config.ToolModeText}
	q := r.Request
	if q.ThinkingBudget != nil {
		o.ThinkingBudget = *q.ThinkingBudget
	}
	if q.PromptCache != nil {
		o.PromptCache = *q.PromptCache
	}
	o.ParallelToolCalls = q.ParallelToolCalls
	if q.MaxTokens != nil {
		o.MaxTokens = *q.MaxTokens
	}
	o.Timeouts = r.timeouts()
	return o
}

// layer is a table of the config file that applies to a model: its
// capabilities and request settings, and its name for errors.
type layer struct {
	at   string
	caps config.Capabilities
	req  config.Request
}

// layersFor returns the tables of f that apply to model of the provider
// name, weakest first: [providers.NAME] (with its capabilities table),
// [models."NAME:*"], [providers.NAME.models.MODEL], [models."NAME:MODEL"].
func layersFor(f *config.File, name, model string) []layer {
	var ls []layer
	p, named := f.Providers[name]
	if named {
		ls = append(ls, layer{"providers." + name, p.Capabilities, p.Request})
	}
	if m, ok := f.Models[name+":*"]; ok {
		ls = append(ls, layer{fmt.Sprintf("models.%q", name+":*"), m.Capabilities, m.Request})
	}
	if model == "*" {
		return ls
	}
	if m, ok := p.Models[model]; named && ok {
		ls = append(ls, layer{fmt.Sprintf("providers.%s.models.%q", name, model), m.Capabilities, m.Request})
	}
	if m, ok := f.Models[name+":"+model]; ok {
		ls = append(ls, layer{fmt.Sprintf("models.%q", name+":"+model), m.Capabilities, m.Request})
	}
	return ls
}

func capLayers(ls []layer) []config.Capabilities {
	out := make([]config.Capabilities, len(ls))
	for i, l := range ls {
		out[i] = l.caps
	}
	return out
}

// override sets *dst to src when src is set.
func override[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// mergeRequests combines the request settings of layers, weakest first: a
// setting replaces the one before it, and extra and headers merge key by
// key.
func mergeRequests(ls []layer) config.Request {
	var r config.Request
	for _, l := range ls {
		q := l.req
		override(&r.ThinkingBudget, q.ThinkingBudget)
		override(&r.PromptCache, q.PromptCache)
		override(&r.MaxTokens, q.MaxTokens)
		override(&r.ReasoningEffort, q.ReasoningEffort)
		override(&r.ParallelToolCalls, q.ParallelToolCalls)
		override(&r.ReasoningSummary, q.ReasoningSummary)
		override(&r.Store, q.Store)
		override(&r.TokenParam, q.TokenParam)
		override(&r.StreamUsage, q.StreamUsage)
		override(&r.IdleTimeout, q.IdleTimeout)
		override(&r.OutputMode, q.OutputMode)
		r.Extra = mergeMap(r.Extra, q.Extra)
		r.Headers = mergeMap(r.Headers, q.Headers)
	}
	return r
}

// mergeMap returns base with over's keys written over it, in a new map
// when over adds any.
func mergeMap[V any](base, over map[string]V) map[string]V {
	if len(over) == 0 {
		return base
	}
	out := make(map[string]V, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// knownNames lists the built-in and configured providers for an error.
func knownNames(f *config.File) string {
	s := "built-in: " + strings.Join(Providers, ", ")
	if names := sortedKeys(f.Providers); len(names) > 0 {
		s += "; configured: " + strings.Join(names, ", ")
	} else {
		s += "; none configured"
		if f.Path != "" {
			s += " in " + f.Path
		}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
