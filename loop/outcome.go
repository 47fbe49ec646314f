package loop

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

// Status says how a turn ended: the one status type of every layer
// (package record).
type Status = record.Status

// Turn statuses (DESIGN §2.4).
const (
	StatusCompleted   = record.StatusCompleted
	StatusPaused      = record.StatusPaused
	StatusInterrupted = record.StatusInterrupted
	StatusFailed      = record.StatusFailed
)

// StopReason says why a turn ended.
type StopReason = record.StopReason

// Stop reasons (DESIGN §2.4).
const (
	StopFinished         = record.StopFinished
	StopForcedBudget     = record.StopForcedBudget
	StopForcedTokens     = record.StopForcedTokens
	StopForcedCost       = record.StopForcedCost
	StopForcedTime       = record.StopForcedTime
	StopForcedLoop       = record.StopForcedLoop
	StopForcedError      = record.StopForcedError
	StopTerminatedByTool = record.StopTerminatedByTool
	StopEmptyAnswer      = record.StopEmptyAnswer
	StopInvalidOutput    = record.StopInvalidOutput
	StopAwaitingUser     = record.StopAwaitingUser
	StopCancelled        = record.StopCancelled
	StopProviderError    = record.StopProviderError
	// StopOutputCapped: the model passed a cap on one call's output
	// (Options.MaxRoundOutput, MaxCallArgs); the error is a *CapError.
	StopOutputCapped = record.StopOutputCapped
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
	// Output is the structured answer (Options.Output): the JSON object
	// the model answered with, checked against the schema. Answer holds
	// the same text.
	Output json.RawMessage `json:"output,omitempty"`
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

// Pause is a turn waiting for the user (package record's).
type Pause = record.Pause

// Summary returns the outcome as carried by the turn_completed event.
func (o *Outcome) Summary() *event.TurnSummary {
	s := &event.TurnSummary{
		Status:           o.Status,
		StopReason:       o.StopReason,
		Answer:           o.Answer,
		Rounds:           o.Rounds,
		SettlementRounds: o.SettlementRounds,
		ToolSteps:        o.ToolSteps,
		Usage:            o.Usage,
		Cost:             o.Cost,
		Output:           o.Output,
	}
	if o.Err != nil {
		s.Error = o.Err.Error()
	}
	return s
}

// Record returns the outcome as the turn's record, for a store: a paused
// outcome carries its State as JSON.
func (o *Outcome) Record() (record.Turn, error) {
	t := record.Turn{
		ID: o.TurnID, ThreadID: o.ThreadID, Status: o.Status, StopReason: o.StopReason, Answer: o.Answer,
		Usage: o.Usage, Cost: o.Cost, Rounds: o.Rounds, SettlementRounds: o.SettlementRounds, ToolSteps: o.ToolSteps,
		Pause: o.Pause,
	}
	if o.Err != nil {
		t.Error = o.Err.Error()
	}
	if o.State != nil {
		b, err := json.Marshal(o.State)
		if err != nil {
			return record.Turn{}, fmt.Errorf("loop: turn %s state: %w", o.TurnID, err)
		}
		t.State = b
	}
	return t, nil
}

// ParseState reads a paused turn's State back from its JSON, as a store
// keeps it (record.Turn.State).
func ParseState(b []byte) (*State, error) {
	st := new(State)
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("loop: a paused turn's state does not decode: %w", err)
	}
	return st, nil
}
