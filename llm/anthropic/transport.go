package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm/transport"
)

// apiVersion is the anthropic-version every request carries: the version the
// SDK's types describe, which anthropic-sdk-go v2 sends on every call
// (internal/requestconfig). It must move with the SDK; transport_test.go
// compares the headers with the SDK's own request.
const apiVersion = "2026-10-21"

// maxErrorBody bounds how much of an error response is read. The API's error
// bodies are a few hundred bytes; a proxy's HTML page is a few kilobytes.
const maxErrorBody = 1 << 20

// endpoint posts Messages requests. Requests go out through net/http directly
// rather than the SDK's client: the adapter already encodes its own body and
// reads the raw event stream, so the SDK's per-request configuration
// (options applied one by one, middleware, telemetry headers) was only
// overhead — about a seventh of the CPU of a streamed round.
type endpoint struct {
	client *http.Client
	url    string
	header http.Header
}

// newEndpoint builds the endpoint of /v1/messages under the options' base URL
// with the headers the SDK would send for the features the adapter uses.
// Neither prompt caching nor extended thinking needs an anthropic-beta
// header: the SDK's Messages.New and NewStreaming add none.
func newEndpoint(o *Options) *endpoint {
	h := make(http.Header, 5)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("Anthropic-Version", apiVersion)
	h.Set("User-Agent", "rein")
	if o.APIKey != "" {
		// The SDK's option.WithAPIKey sends the key this way in this API
		// version, not as x-api-key.
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
	return &endpoint{client: transport.Wrap(o.HTTPClient, o.Timeouts), url: strings.TrimRight(o.BaseURL, "/") + "/v1/messages", header: h}
}

// post sends body and returns the response of a successful call, leaving its
// body to the caller, or the error mapError makes of the failure.
func (e *endpoint) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, mapError(ctx, err, false)
	}
	// Cloned: a client with a cookie jar adds to the request's headers.
	req.Header = e.header.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The caller's own cancellation, named as the SDK named it
			// ("anthropic: context canceled"), without the URL.
			err = ctxErr
		}
		return nil, mapError(ctx, err, false)
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	return nil, mapError(ctx, statusError(req, resp), false)
}

// statusError reads an error response into the SDK's *sdk.Error, built as the
// SDK builds it (internal/requestconfig apiError): its own parser reads the
// body's error.type and error.message, so mapError classifies exactly what it
// classified when the SDK sent the request, and the error chain still holds
// an *sdk.Error. An error is rare; the cost does not matter here.
func statusError(req *http.Request, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("error reading response body: %w", err)
	}
	// Left readable, as the SDK leaves it, for whoever dumps the response.
	resp.Body = io.NopCloser(bytes.NewReader(body))
	e := &sdk.Error{
		Request:     req,
		Response:    resp,
		StatusCode:  resp.StatusCode,
		RequestID:   resp.Header.Get("request-id"),
		WorkspaceID: resp.Header.Get("anthropic-workspace-id"),
	}
	if err := e.UnmarshalJSON(body); err != nil {
		return err
	}
	return e
}

// eventError is the error of an "error" event inside a 200 stream, built as
// the SDK's stream decoder builds it (ssestream richErrorDecoder): the status
// is the stream's 200, which mapError drops.
func eventError(resp *http.Response, data []byte) error {
	e := &sdk.Error{
		Request:     resp.Request,
		Response:    resp,
		StatusCode:  resp.StatusCode,
		RequestID:   resp.Header.Get("request-id"),
		WorkspaceID: resp.Header.Get("anthropic-workspace-id"),
	}
	if e.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return e
}

// errNonFinite refuses a temperature JSON cannot carry.
var errNonFinite = errors.New("temperature is not a finite number")

// withFields adds the fields the SDK's MessageNewParams has no field for to
// its encoded object, in the order and form the SDK's option.WithJSONSet
// appended them (sjson formats a float with 'f' and the shortest precision):
// temperature when set, then "stream":true for a streamed call.
func withFields(body []byte, temperature *float64, stream bool) ([]byte, error) {
	if temperature == nil && !stream {
		return body, nil
	}
	body = bytes.TrimRight(body, " \t\r\n")
	if len(body) < 2 || body[len(body)-1] != '}' {
		return nil, fmt.Errorf("encoded request is not an object: %.40q", body)
	}
	out := make([]byte, 0, len(body)+40)
	out = append(out, body[:len(body)-1]...)
	empty := len(bytes.TrimSpace(out[1:])) == 0
	add := func(key string) {
		if !empty {
			out = append(out, ',')
		}
		empty = false
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `":`...)
	}
	if temperature != nil {
		t := *temperature
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, errNonFinite
		}
		add("temperature")
		out = strconv.AppendFloat(out, t, 'f', -1, 64)
	}
	if stream {
		add("stream")
		out = append(out, "true"...)
	}
	return append(out, '}'), nil
}
