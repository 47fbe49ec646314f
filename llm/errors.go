package llm

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a model error. Kinds are errors themselves, so
// callers branch with errors.Is(err, llm.RateLimited); errors.As with
// *Error gives the details.
type ErrorKind string

// Error kinds (DESIGN §2.6). Providers map status codes and error bodies to
// these; nothing classifies by the words of a message.
const (
	ContextWindowExceeded ErrorKind = "context_window_exceeded"
	RateLimited           ErrorKind = "rate_limited"
	Unauthorized          ErrorKind = "unauthorized"
	BadRequest            ErrorKind = "bad_request"
	ServerError           ErrorKind = "server_error"
	// StreamInterrupted covers a connection reset and a stream that ended
	// without its terminal event.
	StreamInterrupted ErrorKind = "stream_interrupted"
	ToolsUnsupported  ErrorKind = "tools_unsupported"
	// Timeout: a bound on the call's HTTP phases fired (package
	// llm/transport): connect, TLS handshake, response headers, or the
	// silence between two reads; Code names which. Not retried: the wait
	// was long already.
	Timeout ErrorKind = "timeout"
	// TooLarge: the response passed a bound on its size — a whole body
	// over 16 MiB (llm/transport.MaxBody) or one streamed event over 32 MiB
	// (sse.MaxEventSize). Not retried: the next answer would be as large.
	TooLarge ErrorKind = "too_large"
)

func (k ErrorKind) Error() string { return string(k) }

// Error is a typed model error.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status, or 0.
	Status int
	// Code is the provider's error code or type ("rate_limit_error",
	// "context_length_exceeded"), when it sent one.
	Code string
	// Provider names the provider ("openai", "anthropic", "scripted", …).
	Provider string
	Message  string
	// RetryAfter is the server's requested wait, if it named one.
	RetryAfter time.Duration
	// Shown reports that part of the round was already shown to the user
	// when the error happened, so it may not be retried silently.
	Shown bool
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	var s string
	if e.Provider != "" {
		s = e.Provider + ": "
	}
	s += string(e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Message == "" && e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if hint := e.hint(); hint != "" {
		s += " — " + hint
	}
	return s
}

func (e *Error) hint() string {
	switch e.Kind {
	case Unauthorized:
		return "check the API key for this provider"
	case ContextWindowExceeded:
		return "the conversation is too long for this model; compact it or start a new thread"
	case RateLimited:
		return "the provider is rate limiting; wait and retry"
	}
	return ""
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, kind) true for an *Error of that kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(ErrorKind)
	return ok && e.Kind == k
}

// Transient reports whether an error may go away on retry: rate limits,
// server errors, interrupted streams. It is false for anything already shown
// to the user.
func Transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.Shown {
		return false
	}
	switch e.Kind {
	case RateLimited, ServerError, StreamInterrupted:
		return true
	}
	return false
}

// KindForStatus maps an HTTP status to an error kind. Bodies that say more
// (a context-length code in a 400) are the adapter's to read first.
func KindForStatus(status int) ErrorKind {
	switch {
	case status == 401 || status == 403:
		return Unauthorized
	case status == 408 || status == 409:
		// Request timeout and conflict are worth retrying like a server error.
		return ServerError
	case status == 429:
		return RateLimited
	case status == 413:
		return ContextWindowExceeded
	case status >= 500:
		return ServerError
	default:
		return BadRequest
	}
}
