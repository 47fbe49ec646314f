package tool

import (
	"context"
	"encoding/json"
)

// PauseKind says what a pause waits for.
type PauseKind string

// Pause kinds.
const (
	PauseAskUser  PauseKind = "ask_user"
	PauseApproval PauseKind = "approval"
)

// Pause is a request to stop the turn until the user answers.
type Pause struct {
	Kind      PauseKind  `json:"kind"`
	Intro     string     `json:"intro,omitempty"`
	Questions []Question `json:"questions,omitempty"`
	// Payload carries kind-specific data (the call awaiting approval).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Resume is the state a Resumer needs to go on once the pause is
	// answered (a sub-agent's paused turn). It is kept with the paused
	// turn, never shown: a client sees the pause, not what stands behind it.
	Resume json.RawMessage `json:"-"`
}

// Resumer is a tool whose pause is its own: it paused because something it
// runs (a sub-agent's turn) waits for the user. The answer goes back to the
// tool with the state its pause carried (Pause.Resume), instead of becoming
// the call's result as an ask_user answer does; the Output it returns is
// the call's result, or a further pause.
type Resumer interface {
	// Resume goes on with call from state; answer is the user's answer as
	// the engine received it (loop.Answer's JSON).
	Resume(ctx context.Context, call Call, state, answer json.RawMessage) (Output, error)
}

// Question is one question of an ask_user pause.
type Question struct {
	ID            string   `json:"id"`
	Prompt        string   `json:"prompt"`
	Header        string   `json:"header,omitempty"`
	Options       []Option `json:"options,omitempty"`
	MultiSelect   bool     `json:"multi_select,omitempty"`
	AllowFreeText bool     `json:"allow_free_text,omitempty"`
}

// Option is one choice offered with a question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}
