package cli

import (
	"encoding/json"
	"io"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// jsonLines prints each event as one JSON object per line.
type jsonLines struct {
	enc *json.Encoder
}

func newJSONLines(w io.Writer) *jsonLines {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonLines{enc: enc}
}

func (j *jsonLines) Handle(e event.Event) { j.enc.Encode(e) }

// outcomeLine is the last line of --json output (DESIGN §13).
type outcomeLine struct {
	Type       string          `json:"type"`
	Status     loop.Status     `json:"status"`
	StopReason loop.StopReason `json:"stop_reason"`
	Answer     string          `json:"answer"`
	// Output is the structured answer of rein run --schema.
	Output           json.RawMessage `json:"output,omitempty"`
	Rounds           int             `json:"rounds"`
	SettlementRounds int             `json:"settlement_rounds"`
	ToolSteps        int             `json:"tool_steps"`
	Usage            llm.Usage       `json:"usage"`
	Cost             float64         `json:"cost,omitempty"`
	ThreadID         string          `json:"thread_id"`
	TurnID           string          `json:"turn_id"`
	Pause            *loop.Pause     `json:"pause,omitempty"`
	Error            string          `json:"error,omitempty"`
}

func (j *jsonLines) outcome(o *loop.Outcome) {
	l := outcomeLine{
		Type: "outcome", Status: o.Status, StopReason: o.StopReason, Answer: o.Answer, Output: o.Output,
		Rounds: o.Rounds, SettlementRounds: o.SettlementRounds, ToolSteps: o.ToolSteps,
		Usage: o.Usage, Cost: o.Cost, ThreadID: o.ThreadID, TurnID: o.TurnID, Pause: o.Pause,
	}
	if o.Err != nil {
		l.Error = o.Err.Error()
	}
	j.enc.Encode(l)
}
