package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/transport"
)

// mapError turns an SDK or transport error into an *llm.Error. shown says
// whether anything of the round reached the caller before the error.
//
// The kind comes from the HTTP status and the body's error.type; the message
// counts in one narrow case. 413 request_too_large (a body past the byte
// limit) is ContextWindowExceeded. A prompt past the model's context window, though,
// comes back as a plain 400 invalid_request_error, and the API gives it no
// other structured signal (the SDK, v2.15, lists no error.details.error_code
// for it): only its message, which opens with one of two fixed forms (see
// overflowPrefixes). Leaving it BadRequest would keep the engine from ever
// compacting and retrying an Anthropic turn that outgrew the window, so that
// 400 is told by the opening of its message, matched exactly; any other 400
// invalid_request_error stays BadRequest. This is not a search for loose words
// (DESIGN §2.6): a message that merely mentions a long prompt matches nothing.
func mapError(ctx context.Context, err error, shown bool) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("anthropic: %w", err)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		typ := string(apiErr.Type())
		e := &llm.Error{
			Kind:     errorKind(apiErr.StatusCode, typ, apiErr.Message),
			Status:   apiErr.StatusCode,
			Code:     typ,
			Provider: Provider,
			Message:  apiErr.Message,
			Shown:    shown,
			Err:      err,
		}
		if apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		}
		if e.Status == http.StatusOK {
			// An error event inside a 200 stream: the status says nothing.
			e.Status = 0
		}
		return e
	}
	if e := transport.TooLarge(Provider, err); e != nil {
		return e
	}
	var le *llm.Error
	if errors.As(err, &le) {
		if le.Provider == "" {
			// A bound of package llm/transport, which knows no provider.
			c := *le
			c.Provider, c.Shown = Provider, c.Shown || shown
			return &c
		}
		return err
	}
	// Everything else happened on the wire: a refused or reset connection,
	// a body cut short, a garbled event. A new attempt may well succeed.
	return &llm.Error{Kind: llm.StreamInterrupted, Provider: Provider, Shown: shown, Err: err}
}

// errorKind classifies an API error by its error.type, falling back on the
// status for types this package does not know. The message counts only for a
// 400 invalid_request_error, to tell a context overflow (contextOverflow).
func errorKind(status int, typ, msg string) llm.ErrorKind {
	if status == http.StatusRequestEntityTooLarge {
		return llm.ContextWindowExceeded
	}
	switch typ {
	case "rate_limit_error":
		return llm.RateLimited
	case "overloaded_error", "api_error", "timeout_error":
		return llm.ServerError
	case "authentication_error", "permission_error":
		return llm.Unauthorized
	case "request_too_large":
		return llm.ContextWindowExceeded
	case "invalid_request_error":
		if status == http.StatusBadRequest && contextOverflow(msg) {
			return llm.ContextWindowExceeded
		}
		return llm.BadRequest
	case "not_found_error", "billing_error":
		return llm.BadRequest
	}
	if status == http.StatusOK || status == 0 {
		// An unknown error event in a stream: the server gave up on the
		// response, which is what a server error is.
		return llm.ServerError
	}
	return llm.KindForStatus(status)
}

// overflowPrefixes are the fixed openings of the two messages the Messages
// API sends, with a 400 invalid_request_error, for a request that does not
// fit the model's context window, as it sends them (lower case, backquotes
// included):
//
//	prompt is too long: 208244 tokens > 200000 maximum
//	input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again
//
// The first is the prompt alone past the window, the second the prompt and
// the requested max_tokens together; compacting the history answers both.
var overflowPrefixes = []string{
	"prompt is too long",
	"input length and `max_tokens` exceed context limit",
}

// contextOverflow reports whether an invalid_request_error's message is one
// of the API's context-overflow messages. It matches the fixed opening only,
// case-sensitively: the same words elsewhere in a message (quoting a field,
// or inside another error's explanation) do not count.
func contextOverflow(msg string) bool {
	for _, p := range overflowPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// retryAfter reads the server's requested wait: retry-after-ms (milliseconds)
// wins over retry-after (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("retry-after"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	return 0
}

// markShown sets Shown on a typed error produced after output was emitted.
func markShown(err error, shown bool) {
	var e *llm.Error
	if shown && errors.As(err, &e) {
		e.Shown = true
	}
}
