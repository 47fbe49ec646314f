package record

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinhq/rein/llm"
)

// Turn is one turn of a thread: how it stands or how it ended.
type Turn struct {
	ID       string
	ThreadID string
	// Seq is the turn's place in its thread, from 1 (set by the store).
	Seq        int
	Status     Status
	StopReason StopReason
	Answer     string
	// Output is the structured answer of a turn that asked for one (the
	// engine's Outcome.Output): the JSON object, validated. The runtime
	// hands it to the door that waits for the turn; the history holds it
	// as the turn's last answer.
	Output json.RawMessage
	// Error is the error of a failed turn, as text.
	Error string
	Usage llm.Usage
	Cost  float64
	// Rounds counts model calls; SettlementRounds those after the
	// exploration budget; ToolSteps the rounds whose calls were dispatched.
	Rounds           int
	SettlementRounds int
	ToolSteps        int
	// Input is the user input that starts the turn: one item, or the
	// steered items that arrived as the turn before it ended. The store
	// keeps it only while the turn is queued; then it is in the history.
	Input []llm.Item
	// OutputSpec is the structured answer the turn itself asks for
	// (session.Scheduler.StartOutput), over whatever its thread asks for;
	// nil leaves it to the thread. The store keeps it with the turn, so
	// that a turn queued on one node, or running on a node that was lost,
	// asks for the same answer wherever it runs.
	OutputSpec *llm.Output
	Started    time.Time
	// Ended is zero while the turn runs.
	Ended time.Time
	// Pause is what a paused turn waits for.
	Pause *Pause
	// State is a paused turn's engine state, the JSON of a loop.State:
	// everything needed to resume it in this process or another. The store
	// keeps it whole; lists of turns leave it out (it holds the whole
	// history).
	State json.RawMessage
}

// OutputSpecText is how a store keeps t.OutputSpec, the structured answer
// the turn asks for: its JSON, or "" for none. Every store writes the same
// text, so a thread moved between them reads the same.
func (t Turn) OutputSpecText() (string, error) {
	if t.OutputSpec == nil {
		return "", nil
	}
	b, err := json.Marshal(t.OutputSpec)
	if err != nil {
		return "", fmt.Errorf("turn %s output schema: %w", t.ID, err)
	}
	return string(b), nil
}

// ParseOutputSpec reads what OutputSpecText wrote for turn turnID.
func ParseOutputSpec(turnID, s string) (*llm.Output, error) {
	if s == "" {
		return nil, nil
	}
	o := new(llm.Output)
	if err := json.Unmarshal([]byte(s), o); err != nil {
		return nil, fmt.Errorf("turn %s output schema: %w", turnID, err)
	}
	return o, nil
}
