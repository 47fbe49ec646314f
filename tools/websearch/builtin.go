package websearch

import (
	"context"
	"errors"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// builtin is web_search as the model's provider runs it: offered in the
// provider's own shape (llm.BuiltinWebSearch), its calls and results come
// back inside the model's response and are never dispatched here.
type builtin struct{}

// Builtin returns web_search for a model whose provider has a search of
// its own (provider.Capabilities.WebSearch): the adapter offers the
// provider's tool, and the provider searches.
func Builtin() tool.Tool { return builtin{} }

func (builtin) Spec() tool.Spec {
	return tool.Spec{
		Name:        Name,
		Description: "Search the web (run by the model's provider).",
		Access:      tool.ReadOnly,
		Builtin:     llm.BuiltinWebSearch,
	}
}

// Run answers a call that should not happen: a model that calls the
// provider's search as a function gets told so.
func (builtin) Run(context.Context, tool.Call) (tool.Output, error) {
	return tool.Output{}, errors.New("web_search is run by your provider's own search: use it as the provider offers it, not as a function call")
}
