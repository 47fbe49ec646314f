package record

import (
	"encoding/json"
	"time"
)

// Thread is a conversation: its settings and a summary of its turns.
type Thread struct {
	ID string
	// Title is the thread's first user message, shortened.
	Title    string
	Created  time.Time
	Updated  time.Time
	Settings Settings
	// Turns counts the thread's turns (read only: the store counts them).
	Turns int
	// Parent links a sub-agent's thread to the call that ran it; zero for
	// a thread a user started. Set when the thread is first saved.
	Parent Link
	// Owner is the name of the named token that created the thread
	// (rein serve --token-file), "" when no named token did. A store sets
	// it when the thread is created and never changes it.
	Owner string
}

// Link names the tool call of a parent thread's turn that ran a child
// thread (a sub-agent, package agent/task).
type Link struct {
	ThreadID string `json:"thread_id,omitempty"`
	TurnID   string `json:"turn_id,omitempty"`
	CallID   string `json:"call_id,omitempty"`
}

// IsZero reports whether l links to nothing: a top-level thread.
func (l Link) IsZero() bool { return l.ThreadID == "" }

// MaxThreadKBs bounds the knowledge bases a thread attaches
// (Settings.KBs).
const MaxThreadKBs = 16

// Settings are what a thread's turns start from (DESIGN §9, thread/start).
// Empty fields take the defaults of whoever runs the turn.
type Settings struct {
	// Workspace is the directory the file tools may use.
	Workspace string
	// Model is PROVIDER:MODEL.
	Model        string
	Instructions string
	EnableTools  []string
	DisableTools []string
	// ForceTools are mounted whatever their gates say (agent.Tools.Force).
	ForceTools []string
	Approval   string
	Sandbox    string
	MaxRounds  int
	// Approved are the tools the user approved for the whole thread; each
	// turn's end brings them up to date.
	Approved []string
	// KBs are the knowledge bases the thread's turns attach (rag,
	// kb_files, the first message's seed), besides the ones the runtime
	// attaches to every thread.
	KBs []string
	// Output is the JSON Schema of the structured answer the thread's
	// turns ask for, unless a turn asks for its own (thread/start's
	// output); empty: text answers.
	Output json.RawMessage
}
