package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/tools/websearch"
)

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
