package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// maxBody caps what is read of one response.
const maxBody = 4 << 20

// client makes read-only requests to one GitHub API base URL.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
	now   func() time.Time
}

func newClient(cfg Config) (*client, error) {
	raw := strings.TrimRight(cfg.BaseURL, "/")
	if raw == "" {
		raw = DefaultBaseURL
	}
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" || base.User != nil {
		return nil, fmt.Errorf("github: base URL %q: want an http(s) URL such as %s", raw, DefaultBaseURL)
	}
	base.RawQuery, base.Fragment = "", ""
	c := &client{base: base, token: strings.TrimSpace(cfg.Token), now: time.Now}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	// A copy, so the redirect rule below does not change the caller's
	// client: the token is only ever sent to the base URL's host.
	cp := *hc
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("github: stopped after 5 redirects")
		}
		if req.URL.Scheme != base.Scheme || req.URL.Host != base.Host {
			return fmt.Errorf("github: refusing a redirect to %s, outside %s", req.URL.Host, base.Host)
		}
		return nil
	}
	c.http = &cp
	return c, nil
}

// resolve returns the URL of an API path ("/repos/o/r?x=1") under the base
// URL. Absolute URLs, other hosts and paths that climb out are refused, so
// the token never travels anywhere else.
func (c *client) resolve(p string) (*url.URL, error) {
	p = strings.TrimSpace(p)
	ref, err := url.Parse(p)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a valid path: %w", p, err)
	case ref.Scheme != "" || ref.Host != "" || ref.User != nil || strings.HasPrefix(p, "//"):
		return nil, fmt.Errorf("%q is not a path: give a path under the API such as /repos/OWNER/REPO, not a URL", p)
	case !strings.HasPrefix(ref.Path, "/"):
		return nil, fmt.Errorf("%q: the path must start with /, such as /repos/OWNER/REPO", p)
	}
	for seg := range strings.SplitSeq(ref.Path, "/") {
		if seg == ".." || seg == "." {
			return nil, fmt.Errorf("%q: the path must not contain . or .. segments", p)
		}
	}
	u := *c.base
	u.Path = path.Join(c.base.Path, ref.Path)
	u.RawPath = ""
	u.RawQuery = ref.RawQuery
	return &u, nil
}

// get fetches an API path and decodes its JSON into v (when v is non-nil);
// it returns the raw body too.
func (c *client) get(ctx context.Context, p string, v any) ([]byte, error) {
	u, err := c.resolve(p)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "rein-github-tool")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.scrubErr(fmt.Errorf("github: GET %s failed: %w", u.Path, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, c.scrubErr(fmt.Errorf("github: reading the answer to GET %s: %w", u.Path, err))
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("github: the answer to GET %s is larger than %d bytes; ask for less (per_page)", u.Path, maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.apiError(resp, body, u.Path)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return nil, fmt.Errorf("github: the answer to GET %s is not the JSON expected: %w", u.Path, err)
		}
	}
	return body, nil
}

// APIError is a GitHub answer that is not a success, with advice a model
// or a person can act on.
type APIError struct {
	Status int
	// Path is the API path asked for.
	Path string
	// Message is GitHub's own message, with any token removed.
	Message string
	// RateLimited says the rate limit was hit; ResetAt is when it resets,
	// if GitHub said.
	RateLimited bool
	ResetAt     time.Time
	advice      string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("github: GET %s: %d", e.Path, e.Status)
	if e.Message != "" {
		msg += " " + e.Message
	}
	return msg + ": " + e.advice
}

func (c *client) apiError(resp *http.Response, body []byte, p string) error {
	var gh struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &gh)
	e := &APIError{Status: resp.StatusCode, Path: p, Message: c.scrub(strings.TrimSpace(gh.Message))}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		e.advice = "GITHUB_TOKEN is wrong, expired or revoked; set a valid token"
		if c.token == "" {
			e.advice = "this needs authentication; set GITHUB_TOKEN"
		}
	case resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" ||
			resp.Header.Get("Retry-After") != "" || strings.Contains(strings.ToLower(gh.Message), "rate limit"))):
		e.RateLimited = true
		e.ResetAt = resetTime(resp.Header, c.now())
		e.advice = "the GitHub API rate limit is exceeded"
		if !e.ResetAt.IsZero() {
			wait := e.ResetAt.Sub(c.now()).Round(time.Second)
			e.advice += fmt.Sprintf("; it resets at %s (in %s)", e.ResetAt.UTC().Format("15:04:05 UTC"), max(wait, 0))
		}
		if c.token == "" {
			e.advice += "; set GITHUB_TOKEN for a higher limit"
		}
	case resp.StatusCode == http.StatusForbidden:
		e.advice = "access is refused: the token lacks the permission (scope) this needs, or the resource is blocked"
	case resp.StatusCode == http.StatusNotFound:
		e.advice = "not found: it does not exist, or it is private and "
		if c.token == "" {
			e.advice += "no GITHUB_TOKEN is set"
		} else {
			e.advice += "the token cannot see it"
		}
	case resp.StatusCode == http.StatusUnprocessableEntity:
		e.advice = "GitHub rejected the request's parameters"
	case resp.StatusCode >= 500:
		e.advice = "GitHub is failing; try again later"
	default:
		e.advice = "unexpected answer from GitHub"
	}
	return e
}

// resetTime reads when a rate limit ends from X-RateLimit-Reset (epoch
// seconds) or Retry-After (seconds).
func resetTime(h http.Header, now time.Time) time.Time {
	if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && s > 0 {
		return time.Unix(s, 0)
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		return now.Add(time.Duration(s) * time.Second)
	}
	return time.Time{}
}

// scrub removes the token from text that leaves the tool.
func (c *client) scrub(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[redacted]")
}

// scrubErr returns err, or a plain error with the token removed when its
// text holds the token.
func (c *client) scrubErr(err error) error {
	if c.token == "" || !strings.Contains(err.Error(), c.token) {
		return err
	}
	return errors.New(c.scrub(err.Error()))
}
