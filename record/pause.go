package record

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reinhq/rein/tool"
)

// Pause is a turn waiting for the user: an approval of one call, or the
// questions of ask_user. Its JSON is the stored form (the pauses table and
// a paused turn's state), so its spelling does not change.
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
	// Payload is what the tool that paused says of the pause, shown in
	// place of the call awaiting approval (a sub-agent's call: its tool and
	// arguments, not the task's).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Resume is the paused tool's own state (tool.Pause.Resume): the
	// answer goes back to the tool with it (tool.Resumer).
	Resume json.RawMessage `json:"resume,omitempty"`
}

// PauseMismatchError is returned when an answer names a turn or call that is
// not the one waiting.
type PauseMismatchError struct {
	WantTurn, WantCall string
	GotTurn, GotCall   string
}

func (e *PauseMismatchError) Error() string {
	return fmt.Sprintf("loop: this answer is for turn %q call %q, but turn %q is waiting on call %q; answer that call",
		e.GotTurn, e.GotCall, e.WantTurn, e.WantCall)
}

// ErrNotPaused is returned when resuming a turn that is not paused.
var ErrNotPaused = errors.New("loop: the turn is not paused; there is nothing to answer")
