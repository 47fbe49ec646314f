// Package dispatch runs the calls of one round (DESIGN §3): at most
// MaxCalls of them, concurrently where their resource keys allow, starting
// each as soon as its arguments are complete, pause tools last, duplicates
// once, every call checked against the turn's tools and their schemas, each
// under its deadline, and the results in call order.
package dispatch

import (
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Config configures a Dispatcher. The zero value of each field has a
// working default.
type Config struct {
	// Tools is the turn's composed list; calls to anything else are refused.
	Tools *tool.Set
	// MaxCalls is the most calls run per round (default 8); the rest are
	// answered "not run".
	MaxCalls int
	// Grace is how long a cancelled tool may take to return before it is
	// abandoned and answered as aborted (default 2 s).
	Grace time.Duration
	// DefaultTimeout is the deadline of a tool whose spec names none
	// (default 2 min).
	DefaultTimeout time.Duration
	// Timeouts overrides deadlines by tool name.
	Timeouts map[string]time.Duration
	// Redact cleans everything a tool returns — results, errors, partial
	// output, Meta — before it reaches the model, logs, events or the
	// store; nil leaves text as is.
	Redact func(string) string
	// Events receives tool_started and result events; may be nil.
	Events event.Handler
	// Approval says, per call, whether it runs, waits for the user's
	// approval (answered pending; Batch.Approvals lists it) or is refused.
	// Nil runs everything.
	Approval func(spec tool.Spec, c llm.Call) tool.Verdict
	// NoEarlyStart holds every call until Finish instead of starting it as
	// soon as its arguments are complete. The zero value starts early.
	NoEarlyStart bool
	// PartialLimit caps how many bytes of a call's partial output are kept
	// for an aborted result, head and tail halves (default 8 KiB).
	PartialLimit int
}

// RoundInfo identifies a round for events and for tools.
type RoundInfo struct {
	ThreadID string
	TurnID   string
	Round    int
	Phase    llm.Phase
	// Approved runs calls without asking Config.Approval: the user has
	// already approved them (an approved call run after the pause).
	Approved bool
	// ApprovedTools are tools the user approved for the whole thread.
	ApprovedTools map[string]bool
}

// Timing records when a call ran.
type Timing struct {
	Start, End time.Time
}

// PauseRequest is the pause asked for by the honoured pause call.
type PauseRequest struct {
	// Index is the call's position in the round.
	Index  int
	CallID string
	Pause  tool.Pause
}

// Batch is the outcome of a round's calls.
type Batch struct {
	// Results has one result per added call, in call order.
	Results []llm.Result
	// Timings has one entry per result; zero for calls that did not run.
	Timings []Timing
	// Terminate is the index of the first result that ends the turn, or -1.
	Terminate int
	// Pause is the honoured pause, or nil.
	Pause *PauseRequest
	// MorePauses are the round's other honoured pauses, in call order:
	// pauses of tools that resume themselves (tool.Pause.Resume; two
	// sub-agents that each wait for the user). Each is put to the user
	// after Pause, and the turn goes on when all are answered.
	MorePauses []PauseRequest
	// Approvals are the indexes of calls waiting for the user's approval,
	// in call order; their results are pending placeholders.
	Approvals []int
	// Why says, by call index, why a call of Approvals needs approval
	// when its arguments made it ask (tool.CallApprover): what the user
	// is told beside the call. Nil when no call's arguments did.
	Why map[int]string
}
