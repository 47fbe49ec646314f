package agent

import (
	"fmt"
	"io"
	"os"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/websearch"
)

// webSearchTool returns the web_search tool of a turn and why it is
// offered: the provider's own search when the model has one (own), else
// the config's [web_search] backend; nil when neither. A backend that
// cannot be used (no key) is an error, which leaves the tool out.
func webSearchTool(c config.WebSearch, own bool) (tool.Tool, string, error) {
	if own {
		return websearch.Builtin(), "the model's provider has its own search", nil
	}
	if !c.Configured() {
		return nil, "", nil
	}
	b, err := websearch.NewBackend(websearch.FromEnv(c.Backend, c.URL, c.KeyEnv, os.Getenv))
	if err != nil {
		return nil, "", err
	}
	return websearch.New(b), fmt.Sprintf("a search backend is configured (%s)", b.Name()), nil
}

// addWebSearch registers web_search when the turn has a search and returns
// the composition's offered tools; a backend that cannot be used is
// withheld with its reason and a warning on logw.
func addWebSearch(reg *tool.Set, held map[string]string, c config.WebSearch, own bool, logw io.Writer) map[string]string {
	t, why, err := webSearchTool(c, own)
	switch {
	case err != nil:
		held[websearch.Name] = err.Error()
		fmt.Fprintf(logw, "warning: web_search is off: %v\n", err)
		return nil
	case t == nil:
		return nil
	}
	reg.Add(t)
	return map[string]string{websearch.Name: why}
}
