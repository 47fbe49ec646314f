package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

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
func (f *toolFlags) addWebSearch(reg *tool.Set, held map[string]string, logw io.Writer) map[string]string {
	t, why, err := webSearchTool(f.webSearch, f.ownSearch)
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

// webSearchReport says for doctor which search backend answers: it runs
// one small search through the configured backend.
func webSearchReport(ctx context.Context, w io.Writer, f *config.File) {
	if !f.WebSearch.Configured() {
		fmt.Fprintln(w, "web_search\tno [web_search] backend: offered only to models with a search of their own")
		return
	}
	cfg := websearch.FromEnv(f.WebSearch.Backend, f.WebSearch.URL, f.WebSearch.KeyEnv, os.Getenv)
	b, err := websearch.NewBackend(cfg)
	if err != nil {
		fmt.Fprintf(w, "web_search\toff: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := b.Search(ctx, websearch.Query{Text: "rein", MaxResults: 1})
	if err != nil {
		fmt.Fprintf(w, "web_search\t%s does not answer: %v\n", b.Name(), err)
		return
	}
	fmt.Fprintf(w, "web_search\t%s answers (%s; a test search found %d results)\n", b.Name(), baseState(websearchURL(cfg)), len(res))
}

// websearchURL is the endpoint a backend's requests go to.
func websearchURL(c websearch.Config) string {
	switch {
	case c.URL != "":
		return c.URL
	case c.Backend == websearch.Brave:
		return websearch.BraveURL
	case c.Backend == websearch.Tavily:
		return websearch.TavilyURL
	}
	return ""
}
