package rein

import (
	"fmt"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
)

// ModelOptions say how OpenModel reaches a model.
type ModelOptions struct {
	// Key is the API key. Empty reads the provider's variable
	// (OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY); a local server
	// that needs none takes any non-empty value.
	Key string
	// BaseURL overrides the provider's URL, e.g. a local OpenAI-compatible
	// server's "http://localhost:8080/v1" with "openai-chat:MODEL".
	BaseURL string
}

// OpenModel opens the model a spec names, "PROVIDER:MODEL": openai: (the
// Responses API), openai-chat: (Chat Completions, any compatible server),
// anthropic:, deepseek:, or scripted:FILE (a scripted model for tests and
// demos, package llm/scripted); a bare name whose provider it tells
// (gpt-5, o3, claude-…, deepseek-…) works too. The model retries as DESIGN §2.6 says. The
// config file is not read: what it adds (providers of its own, request
// settings, prices) is package provider's Resolve.
func OpenModel(spec string, o ModelOptions) (Model, error) {
	s, err := provider.ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("rein: %w", err)
	}
	m, err := provider.Open(s, provider.Config{APIKey: o.Key, BaseURL: o.BaseURL, File: &config.File{}})
	if err != nil {
		return nil, fmt.Errorf("rein: %w", err)
	}
	return m, nil
}
