package provider

import (
	"fmt"
	"sort"
	"strings"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/scripted"
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
	var named *config.Provider
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
		named = &p
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

	if r.Protocol == "scripted" {
		m, err := scripted.Load(s.Model)
		if err != nil {
			return nil, fmt.Errorf("scripted model: %w", err)
		}
		r.Caps = Capabilities{NativeTools: true, ParallelCalls: true, ReasoningReplay: ReplayNone, Price: nil, Source: "built-in"}
		r.Model = m
		return r, nil
	}

	var layers []config.Capabilities
	if named != nil {
		layers = append(layers, named.Capabilities, named.Models[s.Model])
	}
	layers = append(layers, f.Models[s.String()])
	r.Caps, r.ToolMode = withToolMode(capabilitiesFor(r.Protocol, s.Model, layers...), r.ToolMode)

	key := "none" // a placeholder for servers without keys: never another provider's key from the environment
	if r.KeyEnv != "" {
		key = c.getenv(r.KeyEnv)
		if key == "" {
			return nil, fmt.Errorf("%s: %s is not set; export it (any non-empty value for a local server)", s, r.KeyEnv)
		}
	}
	if r.ToolMode == config.ToolModeText && r.Protocol != "openai-chat" {
		return nil, fmt.Errorf("%s: tool_mode text is supported for the openai-chat protocol only, not %s", s, r.Protocol)
	}

	switch r.Protocol {
	case "openai", "openai-chat":
		o := openai.Options{APIKey: key, BaseURL: r.BaseURL, Model: s.Model, NoStream: c.NoStream, Name: s.Provider}
		if r.Protocol == "openai" {
			r.Model = llm.WithRetry(openai.NewResponses(o), llm.RetryPolicy{})
			return r, nil
		}
		o.TextTools = r.ToolMode == config.ToolModeText
		r.Model = llm.WithRetry(openai.NewChat(o), llm.RetryPolicy{})
		return r, nil
	case "anthropic":
		m, err := anthropic.New(anthropic.Options{APIKey: key, BaseURL: r.BaseURL, Model: s.Model, DisableStreaming: c.NoStream})
		if err != nil {
			return nil, err
		}
		r.Model = llm.WithRetry(m, llm.RetryPolicy{})
		return r, nil
	}
	return nil, fmt.Errorf("%s: unknown protocol %q", s, r.Protocol)
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
