// Package tool defines what a tool is to rein: its spec, the resources a
// call touches, what it returns, and the set of tools a turn may call.
package tool

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// Access is a tool's concurrency class (DESIGN §3). The zero value is
// Exclusive: a tool that says nothing runs alone, which is always safe.
type Access uint8

// Access classes.
const (
	// Exclusive tools run alone: after every earlier call of the round, and
	// before every later one (exec).
	Exclusive Access = iota
	// ReadOnly tools change nothing; calls overlap with everything except
	// writes of the keys they declare through Keyer.
	ReadOnly
	// Mutating tools write; without a Keyer they write the key "tool:NAME",
	// so calls of the same tool run in order and overlap with other tools.
	Mutating
)

func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read"
	case Mutating:
		return "write"
	default:
		return "exclusive"
	}
}

// Spec describes a tool.
type Spec struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the input object. Nil means an object
	// with no declared properties.
	Schema json.RawMessage
	Access Access
	// Timeout is the default deadline of one call; 0 leaves it to the
	// dispatcher's default.
	Timeout time.Duration
	// NeedsApproval asks the user before running under the on-request
	// policy.
	NeedsApproval bool
	// Pauses marks a pause tool (ask_user): it runs after every other call
	// of the round, and only the first such call of a round is honoured.
	Pauses bool
	// Builtin marks a provider-defined tool (llm.Builtin): the model's
	// provider runs it, so it is offered in the provider's own shape and
	// never dispatched.
	Builtin llmBuiltin
}

// LLM returns the spec as offered to a model.
func (s Spec) LLM() llmSpec {
	schema := s.Schema
	if len(schema) == 0 {
		schema = emptyObject
	}
	return llmSpec{Name: s.Name, Description: s.Description, Schema: schema, Builtin: s.Builtin}
}

var emptyObject = json.RawMessage(`{"type":"object","properties":{}}`)

// Keys are the resources one call reads and writes (cleaned file paths,
// "memory", "notebook:ID"). Two calls conflict when they share a key and at
// least one writes it; conflicting calls run in call order.
type Keys struct {
	Reads     []string
	Writes    []string
	Exclusive bool
}

// Keyer is implemented by tools whose resources depend on the arguments,
// such as write_file declaring its path.
type Keyer interface {
	Keys(args json.RawMessage) Keys
}

// KeysOf returns the keys of a call to t with args.
func KeysOf(t Tool, args json.RawMessage) Keys {
	if k, ok := t.(Keyer); ok {
		return k.Keys(args)
	}
	s := t.Spec()
	switch s.Access {
	case ReadOnly:
		return Keys{}
	case Mutating:
		return Keys{Writes: []string{"tool:" + s.Name}}
	default:
		return Keys{Exclusive: true}
	}
}

// Call is what a tool receives.
type Call struct {
	ID   string
	Name string
	// Args is the validated JSON object of arguments.
	Args json.RawMessage
	// Partial receives output produced so far; when the call is aborted
	// the dispatcher reports it in the aborted result. Safe for concurrent
	// use; never nil.
	Partial io.Writer
	// ThreadID and TurnID identify where the call runs.
	ThreadID string
	TurnID   string
	// Input is Args as the tool's own Decoder decoded them ahead of the
	// run, or nil: a tool that gets nil decodes Args itself.
	Input any
}

// Decoder is a tool that decodes its arguments apart from running them.
// The dispatcher decodes on the goroutine that reads the model's stream,
// whose stack has grown already; a call's own goroutine starts on a small
// stack, and growing it for encoding/json (copying it, adjusting every
// frame) cost about a fifth of a typed no-op call's CPU. Decode is given
// arguments that passed the tool's schema (Validator). Its result reaches
// Run as Call.Input; when Decode fails, Run gets nil and reports the error
// itself.
type Decoder interface {
	Decode(args json.RawMessage) (any, error)
}

// Output is what a tool returns.
type Output struct {
	// Text is what the model sees.
	Text string
	// Meta is structured data for UIs, not sent to the model.
	Meta json.RawMessage
	// Failed says Text describes a failure the model should act on.
	Failed bool
	// Terminate ends the turn with Text as the answer.
	Terminate bool
	// Pause pauses the turn (ask_user, approvals). Text is the placeholder
	// result until the user answers.
	Pause *Pause
}

// Tool is something the model can call.
type Tool interface {
	Spec() Spec
	// Run performs one call. A returned error becomes an error result the
	// model can act on; it never fails the turn. Run must return soon after
	// ctx is done.
	Run(ctx context.Context, call Call) (Output, error)
}
