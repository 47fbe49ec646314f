package scripted

import (
	"time"

	"github.com/reinhq/rein/llm"
)

// Script is what a scripted model replays: one [Round] per model call.
type Script struct {
	// Model is the model name reported in each response (default
	// "scripted").
	Model string
	// Chunk and Delay are the defaults for rounds that leave their own at
	// zero.
	Chunk int
	Delay time.Duration
	// Rounds are consumed in order, one per model call.
	Rounds []Round
}

// Round is one model call's answer, and what the model expects to receive
// for it.
type Round struct {
	// Thinking is streamed as reasoning before the text.
	Thinking string
	// Text is the visible text: a preamble when the round has calls, the
	// answer when it has none.
	Text string
	// Calls are the tool calls the model makes, in order.
	Calls []Call
	// Finish is the finish reason; the default is tool_calls when the round
	// has calls and stop when it has none.
	Finish llm.FinishReason
	// Usage is reported in a usage event and in the response.
	Usage llm.Usage
	// Chunk is the number of bytes per text, reasoning or argument delta;
	// 0 sends each whole. A chunk never splits a UTF-8 sequence.
	Chunk int
	// Delay is the wait between two events of the stream.
	Delay time.Duration
	// Hold is an extra wait after the last call's arguments are complete
	// (after the text when there are no calls), before the stream ends. It
	// lets a test see whether a tool starts before the model is done.
	Hold time.Duration
	// Repeat uses the round this many times (0 and 1 mean once). Each use
	// gets fresh call ids.
	Repeat int
	// Error, when set, makes the round fail.
	Error *ErrorSpec
	// Expect lists what the request for this round must hold.
	Expect []Expect

	line int // where the round starts in a script file, 0 if built in Go
}

// Call is a tool call made by a scripted round.
type Call struct {
	// ID is the call id; when empty one is generated ("call_<n>_<i>" for the
	// i-th call of the model's n-th request), unique for the model's
	// lifetime. A given ID is used as is, with "_<k>" appended for the k-th
	// use of a repeated round.
	ID   string
	Name string
	// Args is the arguments object, marshalled to JSON (nil means {}).
	Args any
	// RawArgs is sent verbatim instead of Args, so a test can send
	// arguments that are not valid JSON.
	RawArgs string
}

// ErrorSpec makes a round fail with an [llm.Error].
type ErrorSpec struct {
	// Kind is the error kind; the default is derived from Status, or
	// server_error when Status is 0 too.
	Kind llm.ErrorKind
	// Status is the HTTP status the error reports, or 0.
	Status  int
	Message string
	// RetryAfter is the wait the "server" asks for.
	RetryAfter time.Duration
	// After is the number of events delivered before the error; 0 fails on
	// the first Recv. A value past the round's last event fails in place of
	// the done event.
	After int
}

// Expect is one expectation about the request of a round. Every field that
// is set must hold.
type Expect struct {
	// Result checks a tool result in the history.
	Result *ResultExpect
	// LastUser checks the text of the trailing user-role items (adjacent
	// user items are one message on the wire, so they count as one).
	LastUser *TextExpect
	// System checks the system prompt.
	System *TextExpect
	// ToolChoice is the expected tool choice ("" in the request counts as
	// auto).
	ToolChoice llm.ToolChoice
	// Tools is the exact set of offered tool names; nil leaves it unchecked
	// and an empty non-nil slice expects no tools.
	Tools []string
	// ToolsInclude names tools that must be among those offered.
	ToolsInclude []string
	// Phase is the expected phase of the turn.
	Phase llm.Phase
}

// TextExpect checks a text. Every field that is set must hold.
type TextExpect struct {
	Contains string
	Equals   string
}

// ResultExpect checks a tool result in the history. The result checked is
// the one answering Call, else the latest result of tool Tool, else the
// latest result.
type ResultExpect struct {
	Call     string
	Tool     string
	Contains string
	Equals   string
	Status   llm.ResultStatus
}
