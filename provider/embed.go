package provider

import (
	"fmt"

	"github.com/reinhq/rein/llm/openai"
)

// Embedder returns the embeddings client of a spec (provider:model): the
// provider's OpenAI-compatible /embeddings endpoint, found and keyed as
// Resolve finds and keys its chat models (built-in providers, the config
// file's, --base-url). A provider whose protocol has no such endpoint
// (anthropic, scripted) is an error saying so.
func Embedder(s Spec, c Config) (*openai.Embedder, error) {
	f, err := c.file()
	if err != nil {
		return nil, err
	}
	var protocol, keyEnv, base string
	if b, ok := builtins[s.Provider]; ok {
		protocol, keyEnv, base = b.protocol, b.keyEnv, c.BaseURL
		if base == "" && b.baseEnv != "" {
			base = c.getenv(b.baseEnv)
		}
		if base == "" {
			base = b.base
		}
	} else if p, ok := f.Providers[s.Provider]; ok {
		protocol, keyEnv, base = p.Protocol, p.KeyEnv, p.BaseURL
		if c.BaseURL != "" {
			base = c.BaseURL
		}
	} else {
		return nil, fmt.Errorf("embeddings %s: unknown provider %q (%s)", s, s.Provider, knownNames(f))
	}
	if protocol != "openai" && protocol != "openai-chat" {
		return nil, fmt.Errorf("embeddings %s: the %s protocol has no embeddings endpoint; use an OpenAI-compatible provider (openai, or a configured one such as Ollama or vLLM)", s, protocol)
	}
	key := c.APIKey
	if key == "" && keyEnv != "" {
		if key = c.getenv(keyEnv); key == "" {
			return nil, fmt.Errorf("embeddings %s: %s is not set; export it (any non-empty value for a local server)", s, keyEnv)
		}
	}
	return openai.NewEmbedder(openai.EmbedderOptions{BaseURL: base, APIKey: key, Model: s.Model, Name: s.Provider})
}
