// Package event is the one typed event stream of a turn (DESIGN §10). The
// CLI's --json output, the terminal chat, the server's notifications and
// traces all read it.
package event

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

// Type names an event; it is the "type" field of the JSON form.
type Type string

// Event types.
const (
	TurnStarted    Type = "turn_started"
	TurnCompleted  Type = "turn_completed"
	RoundStarted   Type = "round_started"
	RoundCompleted Type = "round_completed"
	// TextDelta is visible text. In a narration round it is a preamble,
	// not the answer (Role on RoundCompleted says which the round was).
	TextDelta     Type = "text_delta"
	ThinkingDelta Type = "thinking_delta"
	// CallStarted, CallDelta and CallCompleted follow the model writing a
	// call; ToolStarted and Result follow the tool running it.
	CallStarted   Type = "call_started"
	CallDelta     Type = "call_delta"
	CallCompleted Type = "call_completed"
	ToolStarted   Type = "tool_started"
	// ToolOutput is output a running tool wrote so far (exec's stdout and
	// stderr), whole lines in Delta, redacted; the Result has what the
	// model sees.
	ToolOutput Type = "tool_output"
	Result     Type = "result"
	// ItemAdded is emitted when an item joins the history (the store
	// persists on it).
	ItemAdded      Type = "item_added"
	PauseRequested Type = "pause_requested"
	PauseResolved  Type = "pause_resolved"
	Retry          Type = "retry"
	Warning        Type = "warning"
	Usage          Type = "usage"
	Context        Type = "context"
	// Subagent carries an event of a child turn (a sub-agent run by the
	// task tool) in Sub, on the parent's stream: CallID is the parent's
	// call that runs the child. A grandchild's event comes wrapped twice
	// (the child's Subagent event inside the parent's); Depth is the depth
	// of the turn whose event is innermost (1 for a child of the top turn,
	// 2 for a grandchild). A consumer that does not show children skips
	// it; the child's own thread and turn ids are on Sub.
	Subagent Type = "subagent"
)

// Warning codes.
const (
	WarnSettlement  = "settlement"
	WarnForced      = "forced"
	WarnTruncated   = "truncated"
	WarnEmptyNudge  = "empty_nudge"
	WarnLoop        = "loop"
	WarnTooManyCall = "too_many_calls"
	WarnGuard       = "guard"
	WarnToolIgnored = "calls_ignored"
	// WarnOutputCap: a model stream passed a cap on its output and was cut.
	WarnOutputCap = "output_cap"
	// WarnDeadline: a model stream was cut at the turn's deadline.
	WarnDeadline = "deadline"
	// WarnOutputRepair: a structured answer did not match its schema, or
	// came as text where a call was asked for; the model is asked once
	// more.
	WarnOutputRepair = "output_repair"
)

// Round roles.
const (
	RoleNarration = "narration"
	RoleFinish    = "finish"
)

// Event is one event of a turn. Type says which fields are set.
type Event struct {
	Type     Type      `json:"type"`
	Time     time.Time `json:"time"`
	ThreadID string    `json:"thread_id,omitempty"`
	TurnID   string    `json:"turn_id,omitempty"`
	// Round is the 1-based model call of the turn.
	Round int       `json:"round,omitempty"`
	Phase llm.Phase `json:"phase,omitempty"`
	// Role is narration or finish (RoundCompleted).
	Role string `json:"role,omitempty"`
	// AnswerVisible says a narration round's text belongs to the answer
	// (truncated continuation parts).
	AnswerVisible bool   `json:"answer_visible,omitempty"`
	Delta         string `json:"delta,omitempty"`

	CallID string `json:"call_id,omitempty"`
	// Index is the call's position in its round.
	Index int    `json:"index,omitempty"`
	Name  string `json:"name,omitempty"`
	Args  string `json:"args,omitempty"`
	// Status is a result's status, or a completed turn's status.
	Status string `json:"status,omitempty"`
	// Content is a result's text or a warning's message.
	Content string `json:"content,omitempty"`
	// Code is a warning code or a stop reason.
	Code     string  `json:"code,omitempty"`
	Duration float64 `json:"duration_ms,omitempty"`

	Item    *llm.Item      `json:"item,omitempty"`
	Pause   *tool.Pause    `json:"pause,omitempty"`
	Usage   *llm.Usage     `json:"usage,omitempty"`
	Cost    float64        `json:"cost,omitempty"`
	Attempt int            `json:"attempt,omitempty"`
	Max     int            `json:"max,omitempty"`
	Turn    *TurnSummary   `json:"turn,omitempty"`
	Extra   map[string]any `json:"extra,omitempty"`

	// Context is the budget report of the Context event.
	Context *ContextReport `json:"context,omitempty"`

	// Sub is the child's event a Subagent event carries; Depth its depth.
	Sub   *Event `json:"sub,omitempty"`
	Depth int    `json:"depth,omitempty"`
}

// TurnSummary is the outcome carried by TurnCompleted, its status and stop
// reason of the one type every layer spells them with (package record).
type TurnSummary struct {
	Status           record.Status     `json:"status"`
	StopReason       record.StopReason `json:"stop_reason"`
	Answer           string            `json:"answer"`
	Rounds           int               `json:"rounds"`
	SettlementRounds int               `json:"settlement_rounds"`
	ToolSteps        int               `json:"tool_steps"`
	Usage            llm.Usage         `json:"usage"`
	Cost             float64           `json:"cost,omitempty"`
	Error            string            `json:"error,omitempty"`
	// Output is the structured answer of a turn that asked for one
	// (loop.Outcome.Output): the validated JSON object.
	Output json.RawMessage `json:"output,omitempty"`
}

// Handler receives events. Handle is called from the engine's goroutines,
// one event at a time per turn and in order; it must not block for long.
type Handler interface {
	Handle(Event)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(Event)

// Handle calls f(e).
func (f HandlerFunc) Handle(e Event) { f(e) }

// Multi returns a handler that passes each event to every non-nil handler in
// order.
func Multi(hs ...Handler) Handler {
	var out multi
	for _, h := range hs {
		if h != nil {
			out = append(out, h)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multi []Handler

func (m multi) Handle(e Event) {
	for _, h := range m {
		h.Handle(e)
	}
}

// Serial returns a handler that lets one event through at a time, for
// emitters on several goroutines (tools finishing in parallel). It returns
// nil for a nil handler.
func Serial(h Handler) Handler {
	if h == nil {
		return nil
	}
	if _, ok := h.(*serial); ok {
		return h
	}
	return &serial{h: h}
}

type serial struct {
	mu sync.Mutex
	h  Handler
}

func (s *serial) Handle(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Handle(e)
}
