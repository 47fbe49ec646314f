package record

// Status is where a turn is in its life. One spelling everywhere in Go and
// in the store; the server protocol spells StatusRunning "inProgress"
// (package protocol).
type Status string

// Turn statuses (DESIGN §2.4). The engine ends a turn with one of the last
// four; queued and running are the runtime's and the store's.
const (
	// StatusQueued: a turn waiting for the thread's running turn to end.
	StatusQueued Status = "queued"
	// StatusRunning: a turn started and not yet ended.
	StatusRunning     Status = "running"
	StatusPaused      Status = "paused"
	StatusCompleted   Status = "completed"
	StatusInterrupted Status = "interrupted"
	StatusFailed      Status = "failed"
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusPaused, StatusCompleted, StatusInterrupted, StatusFailed:
		return true
	}
	return false
}

// Done reports whether the turn has ended for good: a paused turn has not
// (an answer resumes it).
func (s Status) Done() bool {
	return s == StatusCompleted || s == StatusInterrupted || s == StatusFailed
}

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
	// (loop.Options.MaxRoundOutput, MaxCallArgs).
	StopOutputCapped StopReason = "output_capped"
	// StopInvalidOutput: the turn asked for a structured answer
	// (loop.Options.Output) and the model's answer did not match the
	// schema, even after a repair round.
	StopInvalidOutput StopReason = "invalid_output"
	// StopStoreError: the turn's end could not be recorded, or it was cut
	// and closed when the thread was next opened (DESIGN §2.5).
	StopStoreError StopReason = "store_error"
)
