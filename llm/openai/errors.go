package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/transport"
)

// errorBody is the error shape of OpenAI and the compatible servers. Code is
// kept raw because some servers send a number where OpenAI sends a string.
type errorBody struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Param   string          `json:"param"`
}

func (b *errorBody) code() string {
	var s string
	if json.Unmarshal(b.Code, &s) == nil {
		return s
	}
	if len(b.Code) > 0 && string(b.Code) != "null" {
		return string(b.Code)
	}
	return ""
}

// parseErrorBody reads {"error":{…}}, {"error":"text"}, a bare {…} with a
// message, or plain text.
func parseErrorBody(body []byte) errorBody {
	body = bytes.TrimSpace(body)
	var wrapped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &wrapped) == nil && len(wrapped.Error) > 0 {
		var eb errorBody
		if json.Unmarshal(wrapped.Error, &eb) == nil {
			return eb
		}
		var s string
		if json.Unmarshal(wrapped.Error, &s) == nil {
			return errorBody{Message: s}
		}
	}
	var bare errorBody
	if json.Unmarshal(body, &bare) == nil && (bare.Message != "" || bare.Type != "" || len(bare.Code) > 0) {
		return bare
	}
	const max = 512
	if len(body) > max {
		body = body[:max]
	}
	return errorBody{Message: string(body)}
}

// ToolsUnsupportedCode is the error code (or type) that classifies a
// refusal of tool definitions as [llm.ToolsUnsupported]. No public server
// sends a structured code for it — Ollama, llama.cpp and vLLM answer with
// prose only, which refusesTools reads — so a proxy in front of another
// such server can send this code to get the switch made for it.
const ToolsUnsupportedCode = "tools_unsupported"

// refusesTools reports whether an error answer is a local server's refusal
// of tool definitions, worded in prose only. The wordings are the servers'
// own, matched whole (never "the message mentions tools", DESIGN §2.6), so
// a malformed request or an over-long context is not taken for one:
//
//   - Ollama, for a model whose template has no tools (400): the model's
//     name, then "does not support tools" (then, joined by line breaks,
//     the other capabilities it lacks);
//   - llama.cpp's server started without --jinja (400; 500 in older
//     builds): "tools param requires --jinja flag", and from builds that
//     could not stream with tools, "Cannot use tools with stream";
//   - vLLM started without tool parsing (400): "\"auto\" tool choice
//     requires --enable-auto-tool-choice and --tool-call-parser to be set".
//
// LM Studio takes tool definitions for every model, so it has none.
func refusesTools(status int, msg string) bool {
	if status != http.StatusBadRequest && status != http.StatusInternalServerError {
		return false
	}
	msg = strings.TrimSpace(msg)
	switch msg {
	case "tools param requires --jinja flag", "Cannot use tools with stream":
		return true
	case `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`:
		return status == http.StatusBadRequest
	}
	if status != http.StatusBadRequest {
		return false
	}
	first, _, _ := strings.Cut(msg, "\n")
	name, ok := strings.CutSuffix(first, " does not support tools")
	return ok && name != "" && !strings.ContainsAny(name, " \t")
}

// kindForCode refines a status-derived kind with the provider's error code
// or type, which say more than the status (a context overflow is a 400).
func kindForCode(kind llm.ErrorKind, code, typ string) llm.ErrorKind {
	for _, c := range [...]string{code, typ} {
		switch c {
		case "context_length_exceeded", "string_above_max_length":
			return llm.ContextWindowExceeded
		case "rate_limit_exceeded", "rate_limit_error":
			return llm.RateLimited
		case "invalid_api_key", "authentication_error", "permission_error":
			return llm.Unauthorized
		case "server_error", "server_is_overloaded", "overloaded_error", "api_error":
			// Ollama sends type api_error with a 400 for requests it will
			// never accept; retrying those only delays the error.
			if kind != llm.BadRequest {
				return llm.ServerError
			}
		case ToolsUnsupportedCode:
			return llm.ToolsUnsupported
		}
	}
	return kind
}

// httpError classifies an HTTP error response.
func httpError(provider string, status int, header http.Header, body []byte) *llm.Error {
	eb := parseErrorBody(body)
	code := eb.code()
	kind := kindForCode(llm.KindForStatus(status), code, eb.Type)
	if kind != llm.ContextWindowExceeded && refusesTools(status, eb.Message) {
		kind = llm.ToolsUnsupported
	}
	if code == "" {
		code = eb.Type
	}
	return &llm.Error{
		Kind:       kind,
		Status:     status,
		Code:       code,
		Provider:   provider,
		Message:    eb.Message,
		RetryAfter: retryAfter(header, time.Now()),
	}
}

// streamError classifies an error reported inside a 200 stream or body
// (a Chat chunk with "error", a Responses "error" or "response.failed"
// event). There is no status, so the code decides, and an unknown code is
// a server error: the request itself was accepted.
func streamError(provider string, eb errorBody) *llm.Error {
	code := eb.code()
	kind := kindForCode(llm.ServerError, code, eb.Type)
	if code == "" {
		code = eb.Type
	}
	return &llm.Error{Kind: kind, Code: code, Provider: provider, Message: eb.Message}
}

// transportError classifies a failure to send or read: the connection broke
// or the body ended early. Cancellation is the caller's own and passes
// through unclassified.
func transportError(ctx context.Context, provider string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if e := transport.TooLarge(provider, err); e != nil {
		return e
	}
	var le *llm.Error
	if errors.As(err, &le) {
		// A bound of package llm/transport, which knows no provider.
		c := *le
		if c.Provider == "" {
			c.Provider = provider
		}
		return &c
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &llm.Error{Kind: llm.StreamInterrupted, Provider: provider, Err: err}
}

// retryAfter reads retry-after-ms (OpenAI's precise form) or Retry-After in
// seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
