package openai

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// post sends params (SDK parameters, or a body already encoded as []byte)
// to path through the SDK, with "stream": true set in the body when
// setStream is, and returns the raw response of a successful call, leaving
// its body to the caller, or a classified error.
// The raw response is taken instead of the SDK's decoded value so that the
// adapter can tell a finished stream from a cut one and read error bodies
// that are not shaped as OpenAI's.
func post(ctx context.Context, c *openai.Client, provider, path string, params any, setStream bool) (*http.Response, error) {
	var resp *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&resp)}
	if setStream {
		opts = append(opts, option.WithJSONSet("stream", true))
	}
	err := c.Post(ctx, path, params, &resp, opts...)
	if err == nil && resp != nil && resp.StatusCode < 400 {
		return resp, nil
	}
	if resp != nil && resp.StatusCode >= 400 {
		// The SDK leaves the error body readable on the response.
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
		return nil, httpError(provider, resp.StatusCode, resp.Header, body)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil {
		err = errors.New("no response")
	}
	return nil, transportError(ctx, provider, err)
}
