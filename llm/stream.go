package llm

import (
	"context"
	"errors"
	"io"
	"time"
)

// Model is a language model that streams its answer to a request.
type Model interface {
	// Stream starts one model call. Errors that happen before the first
	// event may be returned here or from the first Recv.
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Verifier is a model that can say whether what it was asked went as it
// expected, once a caller is done with it: the scripted model (package
// llm/scripted) reports a script not played to its end, a failed
// expectation or a request past its end. A runtime that knows a turn was
// the model's whole work (a one-shot door) checks it as an io.Reader's
// upgrades are found: by a type assertion (session.Config.Verify).
type Verifier interface {
	Verify() error
}

// Stream is one model call in progress.
type Stream interface {
	// Recv returns the next event. After the EventDone event it returns
	// io.EOF; any other error is typed (see [Error]).
	Recv() (Event, error)
	// Close releases the stream; it is safe to call more than once and after
	// io.EOF.
	Close() error
}

// EventKind says what a stream event carries.
type EventKind uint8

// Stream event kinds.
const (
	// EventText is visible answer text (after think and DSML filtering).
	EventText EventKind = iota + 1
	// EventReasoning is reasoning text: a reasoning channel or inline
	// <think> content.
	EventReasoning
	// EventCallStart announces a call: Index, and Call with ID and Name.
	EventCallStart
	// EventCallDelta carries a fragment of the arguments of call Index.
	EventCallDelta
	// EventCallDone carries a call whose arguments are complete. The engine
	// may start the tool now, before the stream ends.
	EventCallDone
	// EventUsage carries token usage so far.
	EventUsage
	// EventRetry says the call failed transiently before anything was shown
	// and is being retried.
	EventRetry
	// EventDone is the last event: the complete response.
	EventDone
)

var eventKindNames = [...]string{"", "text", "reasoning", "call_start", "call_delta", "call_done", "usage", "retry", "done"}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "unknown"
}

// Event is one streamed event. Which fields are set depends on Kind.
type Event struct {
	Kind EventKind
	// Index is the call's position in the response (call events).
	Index int
	// Delta is the text of EventText, EventReasoning and EventCallDelta.
	Delta    string
	Call     *Call
	Usage    *Usage
	Retry    *RetryInfo
	Response *Response
}

// RetryInfo describes a retry in progress.
type RetryInfo struct {
	Attempt int // 1-based number of the retry about to happen
	Max     int
	Delay   time.Duration
	Err     error
}

// FinishReason says why the model stopped.
type FinishReason string

// Normalized finish reasons.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
	FinishOther         FinishReason = "other"
)

// Truncated reports whether the output was cut by a token limit
// (length, max_tokens, max_output_tokens).
func (f FinishReason) Truncated() bool { return f == FinishLength }

// Response is a complete model answer.
type Response struct {
	// Parts are the assistant's parts in the order the provider returned
	// them, raw (inline <think> kept), with opaque payloads.
	Parts  []Part
	Finish FinishReason
	// RawFinish is the provider's own finish value ("end_turn",
	// "max_output_tokens", …).
	RawFinish string
	Usage     Usage
	// Model is the model name the provider reported.
	Model string
}

// Usage counts tokens of one call (or a sum of calls).
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + o.InputTokens,
		OutputTokens:      u.OutputTokens + o.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + o.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens + o.CacheWriteTokens,
		ReasoningTokens:   u.ReasoningTokens + o.ReasoningTokens,
	}
}

// Total returns input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Collect reads a stream to its end and returns the response. It closes the
// stream.
func Collect(s Stream) (*Response, error) {
	defer s.Close()
	var resp *Response
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			if resp == nil {
				return nil, &Error{Kind: StreamInterrupted, Message: "stream ended without a done event"}
			}
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		if ev.Kind == EventDone {
			resp = ev.Response
		}
	}
}
