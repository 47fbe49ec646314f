package agent

import (
	"fmt"
	"sync"

	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/tools/kb"
)

// ProviderEmbedders returns the embedders of knowledge bases' models
// (provider:model), found as models are (provider.Embedder with c), each
// made once.
func ProviderEmbedders(c provider.Config) kb.Embedders {
	var mu sync.Mutex
	made := map[string]kb.Embedder{}
	return func(model string) (kb.Embedder, error) {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := made[model]; ok {
			return e, nil
		}
		spec, err := provider.ParseSpec(model)
		if err != nil {
			return nil, fmt.Errorf("embedding model: %w", err)
		}
		e, err := provider.Embedder(spec, c)
		if err != nil {
			return nil, err
		}
		made[model] = e
		return e, nil
	}
}
