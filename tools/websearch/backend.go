package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The backends.
const (
	SearXNG = "searxng"
	Brave   = "brave"
	Tavily  = "tavily"
)

// Backends are the names Config.Backend takes.
var Backends = []string{SearXNG, Brave, Tavily}

// The public endpoints of the backends that have one.
const (
	BraveURL  = "https://api.search.brave.com/res/v1/web/search"
	TavilyURL = "https://api.tavily.com/search"
)

// DefaultKeyEnv is the environment variable each backend's key is read
// from when the config names none. SearXNG needs no key.
var DefaultKeyEnv = map[string]string{Brave: "BRAVE_API_KEY", Tavily: "TAVILY_API_KEY"}

// maxBody bounds what is read of an answer: twenty results with snippets
// are a few tens of kilobytes.
const maxBody = 2 << 20

// Config chooses and configures a backend.
type Config struct {
	// Backend is "searxng", "brave" or "tavily".
	Backend string
	// URL is SearXNG's base URL (required: https://search.example.org, or
	// http://127.0.0.1:8888), or the endpoint of Brave or Tavily (default
	// their public one).
	URL string
	// Key is Brave's subscription token or Tavily's API key; SearXNG sends
	// none.
	Key string
	// KeyEnv names the variable Key came from, for messages (default
	// DefaultKeyEnv's).
	KeyEnv string
	// HTTPClient makes the requests (default: a client with DefaultTimeout).
	// Its redirect policy is replaced: redirects are not followed.
	HTTPClient *http.Client
}

// FromEnv returns the Config of a [web_search] table — backend, url and
// key_env, the variable holding the key (default DefaultKeyEnv's) — with
// the key read through getenv.
func FromEnv(backend, url, keyEnv string, getenv func(string) string) Config {
	name := strings.ToLower(strings.TrimSpace(backend))
	if keyEnv == "" {
		keyEnv = DefaultKeyEnv[name]
	}
	c := Config{Backend: name, URL: url, KeyEnv: keyEnv}
	if keyEnv != "" {
		c.Key = strings.TrimSpace(getenv(keyEnv))
	}
	return c
}

// NewBackend returns the backend cfg names, or an error saying what to
// fix in the [web_search] table.
func NewBackend(cfg Config) (Backend, error) {
	name := strings.ToLower(strings.TrimSpace(cfg.Backend))
	keyEnv := cfg.KeyEnv
	if keyEnv == "" {
		keyEnv = DefaultKeyEnv[name]
	}
	var endpoint string
	switch name {
	case SearXNG:
		if strings.TrimSpace(cfg.URL) == "" {
			return nil, errors.New(`web_search backend "searxng" needs url: the base URL of your SearXNG instance, such as "http://127.0.0.1:8888"`)
		}
		endpoint = strings.TrimRight(strings.TrimSpace(cfg.URL), "/") + "/search"
	case Brave, Tavily:
		if strings.TrimSpace(cfg.Key) == "" {
			return nil, fmt.Errorf("web_search backend %q needs an API key: set %s", name, keyEnv)
		}
		endpoint = strings.TrimSpace(cfg.URL)
		if endpoint == "" {
			endpoint = map[string]string{Brave: BraveURL, Tavily: TavilyURL}[name]
		}
	case "":
		return nil, fmt.Errorf("web_search needs a backend: one of %s", strings.Join(Backends, ", "))
	default:
		return nil, fmt.Errorf("web_search backend %q: use one of %s", cfg.Backend, strings.Join(Backends, ", "))
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("web_search url %q: use an http or https URL without user information", endpoint)
	}
	if u.Scheme == "http" && name != SearXNG {
		// The key would cross the network in clear text.
		if h := u.Hostname(); h != "localhost" && h != "127.0.0.1" && h != "::1" {
			return nil, fmt.Errorf("web_search url %q: %s sends its key, so use https (http only to localhost)", endpoint, name)
		}
	}
	hc := &http.Client{Timeout: DefaultTimeout}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &client{name: name, endpoint: u, key: cfg.Key, keyEnv: keyEnv, http: hc}
	switch name {
	case SearXNG:
		return &searxng{c}, nil
	case Brave:
		return &brave{c}, nil
	}
	return &tavily{c}, nil
}

// client is the HTTP side every backend shares.
type client struct {
	name     string
	endpoint *url.URL
	key      string
	keyEnv   string
	http     *http.Client
}

// RateLimitError reports a backend that refused a search for too many
// requests (HTTP 429, or Tavily's plan limits).
type RateLimitError struct {
	Backend string
	// RetryAfter is how long the backend asked to wait; 0 when it did not
	// say.
	RetryAfter time.Duration
	Message    string
}

func (e *RateLimitError) Error() string {
	s := fmt.Sprintf("web_search: %s is rate limiting searches", e.Backend)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf("; retry after %s", e.RetryAfter.Round(time.Second))
	} else {
		s += "; wait before searching again"
	}
	if e.Message != "" {
		s += " (" + e.Message + ")"
	}
	return s
}

// APIError reports a backend that answered a search with an error, or
// with a body that is not its documented shape.
type APIError struct {
	Backend string
	// KeyEnv names the variable of the key, for the hint of a refused key.
	KeyEnv string
	// Status is the HTTP status; 0 for an answer that could not be read.
	Status  int
	Message string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("web_search: %s", e.Backend)
	if e.Status != 0 {
		s += fmt.Sprintf(" answered HTTP %d", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if h := e.hint(); h != "" {
		s += " — " + h
	}
	return s
}

func (e *APIError) hint() string {
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden && e.Backend != SearXNG:
		return fmt.Sprintf("check the API key in %s", e.KeyEnv)
	case e.Status == http.StatusForbidden && e.Backend == SearXNG:
		return `enable the JSON format in the instance's settings.yml (search: formats: [html, json])`
	case e.Status >= 300 && e.Status < 400:
		return "the configured url redirects; set url to where it points"
	}
	return ""
}

// get sends a GET with query parameters and decodes the JSON answer into
// out.
func (c *client) get(ctx context.Context, params url.Values, header http.Header, out any) error {
	u := *c.endpoint
	q := u.Query()
	maps.Copy(q, params)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("web_search: %w", err)
	}
	maps.Copy(req.Header, header)
	return c.do(req, out)
}

// post sends body as JSON and decodes the JSON answer into out.
func (c *client) post(ctx context.Context, body any, header http.Header, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("web_search: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("web_search: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	maps.Copy(req.Header, header)
	return c.do(req, out)
}

func (c *client) do(req *http.Request, out any) error {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "rein-web-search/1")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return fmt.Errorf("web_search: %s did not answer: %w", c.name, ctxErr)
		}
		// The error names the URL, which may hold a key in its query for
		// no backend here; strip it all the same.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &APIError{Backend: c.name, Message: fmt.Sprintf("could not reach %s: %s", c.endpoint.Host, clean(err.Error(), 300))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return &APIError{Backend: c.name, Status: resp.StatusCode, Message: "the answer broke off: " + clean(err.Error(), 300)}
	}
	if resp.StatusCode == http.StatusTooManyRequests || c.name == Tavily && (resp.StatusCode == 432 || resp.StatusCode == 433) {
		return &RateLimitError{Backend: c.name, RetryAfter: retryAfter(resp.Header.Get("Retry-After")), Message: errorMessage(body)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &APIError{Backend: c.name, KeyEnv: c.keyEnv, Status: resp.StatusCode, Message: errorMessage(body)}
	}
	if len(body) > maxBody {
		return &APIError{Backend: c.name, Status: resp.StatusCode, Message: fmt.Sprintf("the answer is larger than %d bytes", maxBody)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &APIError{Backend: c.name, Status: resp.StatusCode, Message: "the answer is not the JSON the API documents: " + clean(err.Error(), 200)}
	}
	return nil
}

// retryAfter reads a Retry-After header in seconds or as an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return min(time.Duration(n)*time.Second, 24*time.Hour)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return min(d, 24*time.Hour)
		}
	}
	return 0
}

// errorMessage finds the message in an error body — {"error":"…"},
// {"detail":{"error":"…"}} (Tavily), {"error":{"detail":"…"}} (Brave),
// {"message":"…"} — or the body's start as text.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		for _, raw := range []json.RawMessage{v.Error, v.Detail} {
			if s := messageIn(raw); s != "" {
				return clean(s, 300)
			}
		}
		if v.Message != "" {
			return clean(v.Message, 300)
		}
	}
	return clean(string(body), 300)
}

func messageIn(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Error  string `json:"error"`
		Detail string `json:"detail"`
		Msg    string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil {
		for _, s := range []string{o.Detail, o.Error, o.Msg} {
			if s != "" {
				return s
			}
		}
	}
	return ""
}
