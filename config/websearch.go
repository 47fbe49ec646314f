package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/reinhq/rein/sandbox"
)

// WebSearch is the [web_search] table: the search API web_search uses for
// models that have no search of their own (DESIGN §7.3). Package
// tools/websearch holds the backends; the key is read from the
// environment, never from the file.
//
//	[web_search]
//	backend = "searxng"                # searxng, brave or tavily
//	url     = "http://127.0.0.1:8888"  # SearXNG's base URL (required for it);
//	                                   # for brave and tavily their endpoint, default the public one
//	key_env = "BRAVE_API_KEY"          # default BRAVE_API_KEY, TAVILY_API_KEY; SearXNG needs none
//
// Without the table (or with backend left out) web_search is offered only
// to models with a search of their own.
type WebSearch struct {
	Backend string `toml:"backend"`
	URL     string `toml:"url"`
	KeyEnv  string `toml:"key_env"`
}

// WebSearchBackends are the values of web_search.backend, as package
// tools/websearch names them.
var WebSearchBackends = []string{"searxng", "brave", "tavily"}

// Configured says whether the table names a backend.
func (w WebSearch) Configured() bool { return strings.TrimSpace(w.Backend) != "" }

func (w WebSearch) check() []error {
	var errs []error
	b := strings.ToLower(strings.TrimSpace(w.Backend))
	switch {
	case b == "" && (w.URL != "" || w.KeyEnv != ""):
		errs = append(errs, fmt.Errorf("web_search: backend is missing (one of %s)", strings.Join(WebSearchBackends, ", ")))
	case b != "" && !slices.Contains(WebSearchBackends, b):
		errs = append(errs, fmt.Errorf("web_search: backend %q: use one of %s", w.Backend, strings.Join(WebSearchBackends, ", ")))
	case b == "searxng" && strings.TrimSpace(w.URL) == "":
		errs = append(errs, fmt.Errorf(`web_search: backend "searxng" needs url, the base URL of your instance (such as "http://127.0.0.1:8888")`))
	}
	if w.URL != "" {
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("web_search: url %q: want an http:// or https:// URL", w.URL))
		}
	}
	if w.KeyEnv != "" && sandbox.CheckEnvName(w.KeyEnv) != nil {
		errs = append(errs, fmt.Errorf("web_search: key_env %q: want the name of an environment variable (letters, digits, '_')", w.KeyEnv))
	}
	return errs
}
