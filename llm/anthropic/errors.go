package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm"
)

// mapError turns an SDK or transport error into an *llm.Error. shown says
// whether anything of the round reached the caller before the error.
//
// The kind comes from the HTTP status and the body's error.type, never from
// the message. A prompt longer than the context window is reported by the API
// as a plain 400 invalid_request_error whose only distinguishing signal is
// its message text, so it stays BadRequest; ContextWindowExceeded is given
// only for 413 request_too_large, the documented structured signal that a
// request is too large.
func mapError(ctx context.Context, err error, shown bool) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("anthropic: %w", err)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		typ := string(apiErr.Type())
		e := &llm.Error{
			Kind:     errorKind(apiErr.StatusCode, typ),
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
	var le *llm.Error
	if errors.As(err, &le) {
		return err
	}
	// Everything else happened on the wire: a refused or reset connection,
	// a body cut short, a garbled event. A new attempt may well succeed.
	return &llm.Error{Kind: llm.StreamInterrupted, Provider: Provider, Shown: shown, Err: err}
}

// errorKind classifies an API error by its error.type, falling back on the
// status for types this package does not know.
func errorKind(status int, typ string) llm.ErrorKind {
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
	case "invalid_request_error", "not_found_error", "billing_error":
		return llm.BadRequest
	}
	if status == http.StatusOK || status == 0 {
		// An unknown error event in a stream: the server gave up on the
		// response, which is what a server error is.
		return llm.ServerError
	}
	return llm.KindForStatus(status)
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
