package loop

import (
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Status says how a turn ended.
type Status string

// Turn statuses (DESIGN §2.4).
const (
	StatusCompleted   Status = "completed"
	StatusPaused      Status = "paused"
	StatusInterrupted Status = "interrupted"
	StatusFailed      Status = "failed"
)

// StopReason says why a turn ended.
type StopReason string

// Stop reasons (DESIGN §2.4).
const (
	StopFinished         StopReason = "finished"
	StopForcedBudget     StopReason = "forced_budget"
	StopForcedTokens     StopReason = "forced_tokens"
	StopForcedCost       StopReason = "forced_cost"
	StopForcedTime       StopReason = "forced_time"
	StopForcedLoop       StopReason = "forced_loop"
	StopForcedError      StopReason = "forced_error"
	StopTerminatedByTool StopReason = "terminated_by_tool"
	StopEmptyAnswer      StopReason = "empty_answer"
	StopAwaitingUser     StopReason = "awaiting_user"
	StopCancelled        StopReason = "cancelled"
	StopProviderError    StopReason = "provider_error"
	// StopOutputCapped: the model passed a cap on one call's output
	// (Options.MaxRoundOutput, MaxCallArgs); the error is a *CapError.
	StopOutputCapped StopReason = "output_capped"
)

// Outcome is how a turn ended.
type Outcome struct {
	ThreadID   string     `json:"thread_id,omitempty"`
	TurnID     string     `json:"turn_id"`
	Status     Status     `json:"status"`
	StopReason StopReason `json:"stop_reason"`
	// Answer is the finish round's visible text, after any continuation
	// parts of truncated rounds; for a forced finish it is the forced
	// round's text; for a terminating tool, its result.
	Answer string `json:"answer"`
	// Rounds counts model calls made (retries not counted).
	Rounds           int `json:"rounds"`
	SettlementRounds int `json:"settlement_rounds"`
	// ToolSteps counts rounds whose calls were dispatched.
	ToolSteps int       `json:"tool_steps"`
	Usage     llm.Usage `json:"usage"`
	Cost      float64   `json:"cost,omitempty"`
	// Pause is set when Status is paused.
	Pause *Pause `json:"pause,omitempty"`
	// State is set when Status is paused: everything needed to resume the
	// turn, in this process or another (it marshals to JSON).
	State *State `json:"-"`
	// Approved are the tools approved for the whole thread, this turn's
	// approvals included; pass them to the thread's next Turn.
	Approved []string `json:"approved,omitempty"`
	// Items are the items this turn added to the history, in order.
	Items []llm.Item `json:"-"`
	// Carry is what this turn leaves for the thread's next one: pass it in
	// that Turn (with History extended by Items) and the turn starts
	// without copying the history. Nil for a paused turn (its State goes
	// on) and for a resumed State read back from JSON.
	Carry *Carry `json:"-"`
	// Err is the error of a failed turn.
	Err error `json:"-"`
}

// Pause is a turn waiting for the user.
type Pause struct {
	ThreadID  string          `json:"thread_id,omitempty"`
	TurnID    string          `json:"turn_id"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Kind      tool.PauseKind  `json:"kind"`
	Intro     string          `json:"intro,omitempty"`
	Questions []tool.Question `json:"questions,omitempty"`
	// Args are the arguments of a call awaiting approval.
	Args string `json:"args,omitempty"`
}

// Summary returns the outcome as carried by the turn_completed event.
func (o *Outcome) Summary() *event.TurnSummary {
	s := &event.TurnSummary{
		Status:           string(o.Status),
		StopReason:       string(o.StopReason),
		Answer:           o.Answer,
		Rounds:           o.Rounds,
		SettlementRounds: o.SettlementRounds,
		ToolSteps:        o.ToolSteps,
		Usage:            o.Usage,
		Cost:             o.Cost,
	}
	if o.Err != nil {
		s.Error = o.Err.Error()
	}
	return s
}
