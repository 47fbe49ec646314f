package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/reinhq/rein/llm/transport"
)

// endpoint posts request bodies to one API path. Requests go out through
// net/http directly rather than the SDK's client: the adapters encode their
// own bodies and read the raw response (to tell a finished stream from a cut
// one, and to read error bodies not shaped as OpenAI's), so the SDK's
// per-request configuration and middleware were only overhead — about a
// tenth of the CPU of a turn over HTTP.
type endpoint struct {
	client   *http.Client
	url      string
	header   http.Header
	provider string
}

// newEndpoint builds the endpoint of path under the options' base URL, with
// the headers every request carries.
func (o *Options) newEndpoint(path string) *endpoint {
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	h := make(http.Header, 4+len(o.Headers))
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("User-Agent", "rein")
	if o.APIKey != "" {
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
	org, project := o.Organization, o.Project
	if o.BaseURL == "" || strings.HasPrefix(o.BaseURL, DefaultBaseURL) {
		// The variables the official SDK reads, for OpenAI's own API only:
		// they mean nothing to other servers.
		if org == "" {
			org = os.Getenv("OPENAI_ORG_ID")
		}
		if project == "" {
			project = os.Getenv("OPENAI_PROJECT_ID")
		}
	}
	if org != "" {
		h.Set("OpenAI-Organization", org)
	}
	if project != "" {
		h.Set("OpenAI-Project", project)
	}
	for k, v := range o.Headers {
		h.Set(k, v)
	}
	return &endpoint{client: transport.Wrap(o.HTTPClient, o.Timeouts), url: strings.TrimRight(base, "/") + "/" + path, header: h, provider: o.name()}
}

// post sends body and returns the response of a successful call, leaving
// its body to the caller, or a classified error.
func (e *endpoint) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, transportError(ctx, e.provider, err)
	}
	// Cloned: a client with a cookie jar adds to the request's headers.
	req.Header = e.header.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, e.provider, err)
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return nil, httpError(e.provider, resp.StatusCode, resp.Header, b)
}
