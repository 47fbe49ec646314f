// Package provider turns a model spec such as "openai:gpt-5-mini" or
// "scripted:demo.yaml" into an llm.Model (DESIGN §6, §13): which wire
// protocol, which base URL and which key, from flags and the environment.
package provider

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/scripted"
)

// Spec names a model: provider and model name.
type Spec struct {
	Provider string
	Model    string
}

func (s Spec) String() string { return s.Provider + ":" + s.Model }

// Providers are the known provider prefixes.
var Providers = []string{"openai", "openai-chat", "anthropic", "deepseek", "scripted"}

// ParseSpec parses "provider:model".
func ParseSpec(s string) (Spec, error) {
	p, m, ok := strings.Cut(s, ":")
	if !ok || p == "" || m == "" {
		return Spec{}, fmt.Errorf("model %q: want PROVIDER:MODEL, e.g. openai:gpt-5-mini or scripted:script.yaml (providers: %s)", s, strings.Join(Providers, ", "))
	}
	for _, k := range Providers {
		if p == k {
			return Spec{Provider: p, Model: m}, nil
		}
	}
	return Spec{}, fmt.Errorf("model %q: unknown provider %q (known: %s)", s, p, strings.Join(Providers, ", "))
}

// Config is what Open reads besides the spec.
type Config struct {
	// BaseURL overrides the provider's base URL (--base-url).
	BaseURL string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// NoStream asks for whole responses instead of streams.
	NoStream bool
}

func (c Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	return os.Getenv(k)
}

// ErrNoProvider says no model was given and no provider key is set.
var ErrNoProvider = errors.New("no model configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or DEEPSEEK_API_KEY " +
	"(any non-empty value for a local server, with --base-url), or pass --model PROVIDER:MODEL; " +
	"to see rein work offline, run: rein demo")

// Default returns the spec of the first provider whose key is set, or
// ErrNoProvider.
func Default(c Config) (Spec, error) {
	switch {
	case c.getenv("OPENAI_API_KEY") != "":
		return Spec{Provider: "openai", Model: "gpt-5-mini"}, nil
	case c.getenv("ANTHROPIC_API_KEY") != "":
		return Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}, nil
	case c.getenv("DEEPSEEK_API_KEY") != "":
		return Spec{Provider: "deepseek", Model: "deepseek-chat"}, nil
	}
	return Spec{}, ErrNoProvider
}

// Open returns the model a spec names, wrapped with the retry policy of
// DESIGN §2.6 (the scripted model is not retried: its errors are the test).
func Open(s Spec, c Config) (llm.Model, error) {
	base := func(env string) string {
		if c.BaseURL != "" {
			return c.BaseURL
		}
		return c.getenv(env)
	}
	key := func(env string) (string, error) {
		k := c.getenv(env)
		if k == "" {
			return "", fmt.Errorf("%s: %s is not set; export it (any non-empty value for a local server)", s, env)
		}
		return k, nil
	}
	switch s.Provider {
	case "scripted":
		m, err := scripted.Load(s.Model)
		if err != nil {
			return nil, fmt.Errorf("scripted model: %w", err)
		}
		return m, nil
	case "openai", "openai-chat":
		k, err := key("OPENAI_API_KEY")
		if err != nil {
			return nil, err
		}
		o := openai.Options{APIKey: k, BaseURL: base("OPENAI_BASE_URL"), Model: s.Model, NoStream: c.NoStream}
		if s.Provider == "openai" {
			return llm.WithRetry(openai.NewResponses(o), llm.RetryPolicy{}), nil
		}
		return llm.WithRetry(openai.NewChat(o), llm.RetryPolicy{}), nil
	case "deepseek":
		k, err := key("DEEPSEEK_API_KEY")
		if err != nil {
			return nil, err
		}
		b := base("DEEPSEEK_BASE_URL")
		if b == "" {
			b = "https://api.deepseek.com"
		}
		return llm.WithRetry(openai.NewChat(openai.Options{APIKey: k, BaseURL: b, Model: s.Model, Name: "deepseek", NoStream: c.NoStream}), llm.RetryPolicy{}), nil
	case "anthropic":
		k, err := key("ANTHROPIC_API_KEY")
		if err != nil {
			return nil, err
		}
		m, err := anthropic.New(anthropic.Options{APIKey: k, BaseURL: base("ANTHROPIC_BASE_URL"), Model: s.Model, DisableStreaming: c.NoStream})
		if err != nil {
			return nil, err
		}
		return llm.WithRetry(m, llm.RetryPolicy{}), nil
	}
	return nil, fmt.Errorf("unknown provider %q", s.Provider)
}
