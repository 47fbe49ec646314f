package tool

import "encoding/json"

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
