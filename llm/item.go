package llm

import "encoding/json"

// Role says who an item speaks for. It is a small integer so that an
// [Item] stays small (a long thread's context is copied at a new turn's
// start); in JSON, SQL and text it is its name ("user", "assistant",
// "tool"; the zero value is ""), see role.go.
type Role uint8

// Roles of history items. System prompts are not items: they travel in
// [Request.System] so they stay byte-stable across a turn.
const (
	// RoleNone is the zero value, written "": no item of a valid history
	// has it.
	RoleNone Role = iota
	RoleUser
	RoleAssistant
	// RoleTool items hold exactly one result part answering one call.
	RoleTool
)

// Origin says where a user-role item came from. The zero value is input typed
// by the user. Like [Role] it is a small integer written as its name
// ("", "directive", "marker", "steer", "compaction"), see role.go.
type Origin uint8

// Origins of user-role items.
const (
	OriginInput Origin = iota
	// OriginDirective marks text the engine added to steer the model (settle,
	// finish, continue, nudge, resume). Directives are kept in the turn that
	// needed them and left out of the context of later turns.
	OriginDirective
	// OriginMarker marks a note about the conversation itself, such as "the
	// previous turn was interrupted". Markers are kept in later turns.
	OriginMarker
	// OriginSteer marks input the user added while the turn was running.
	OriginSteer
	// OriginCompaction marks a compaction: the handoff summary that stands
	// for the history before it (DESIGN §8). Requests start from the latest
	// one, in the turn that wrote it and in later turns.
	OriginCompaction
)

// Item is one entry of history: a user message, an assistant message (text,
// reasoning, calls), a tool result, or a marker.
//
// Adjacent user-role items are sent as one user message by every adapter, so
// a directive appended after user input never produces two user messages side
// by side on the wire while history stays append-only.
type Item struct {
	// ID identifies the item within its thread (assigned by the store or the
	// engine). Empty for items not yet recorded.
	ID string `json:"id,omitempty"`
	// TurnID is the turn that produced the item.
	TurnID string `json:"turn_id,omitempty"`
	Role   Role   `json:"role"`
	Origin Origin `json:"origin,omitempty"`
	Parts  []Part `json:"parts"`
}

// PartKind says what a part holds.
type PartKind string

// Kinds of parts.
const (
	PartText      PartKind = "text"
	PartReasoning PartKind = "reasoning"
	PartCall      PartKind = "call"
	PartResult    PartKind = "result"
)

// Part is one ordered piece of an item.
type Part struct {
	Kind PartKind `json:"kind"`
	// Text is the raw text for text parts (inline <think> blocks included:
	// the model gets back what it wrote) and the readable reasoning (summary,
	// thinking text, reasoning_content) for reasoning parts.
	Text   string  `json:"text,omitempty"`
	Call   *Call   `json:"call,omitempty"`
	Result *Result `json:"result,omitempty"`
	// Opaque is the provider's payload for this part, replayed verbatim to the
	// same provider and never to another.
	Opaque *Opaque `json:"opaque,omitempty"`
}

// Opaque is a provider payload that must be replayed unchanged: an encrypted
// reasoning item, a thinking block's signature, redacted thinking data, a
// provider item id.
type Opaque struct {
	// Provider names the wire protocol family that produced the payload, such
	// as "openai-responses", "anthropic" or "openai-chat". A payload is
	// replayed only to the same provider.
	Provider string `json:"provider"`
	// ID is the provider's id for the part (a Responses item id such as rs_…
	// or msg_…).
	ID string `json:"id,omitempty"`
	// Signature is Anthropic's thinking signature.
	Signature string `json:"signature,omitempty"`
	// Encrypted is opaque reasoning content: Responses encrypted_content or
	// Anthropic redacted_thinking data.
	Encrypted string `json:"encrypted,omitempty"`
	// Raw is the part exactly as the provider sent it, for anything the
	// fields above do not name.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// CallFormat says how the model wrote a call.
type CallFormat string

// Call formats.
const (
	// CallNative is a call returned in the provider's tool-call structure.
	CallNative CallFormat = ""
	// CallText is a call parsed from text (DSML); it is replayed in the text
	// format the model wrote when the turn runs in text tool mode.
	CallText CallFormat = "text"
)

// Call is a tool call made by the model.
type Call struct {
	// ID is the id results refer to (Chat tool_call id, Responses call_id,
	// Anthropic tool_use id). Unique within a thread.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is the argument text exactly as received (Chat and Responses send
	// a JSON string; Anthropic's input object is kept as its JSON text).
	Args string `json:"args"`
	// ItemID is the provider's item id when it differs from ID (Responses
	// function_call items have both id and call_id).
	ItemID string     `json:"item_id,omitempty"`
	Format CallFormat `json:"format,omitempty"`
}

// ResultStatus classifies a result for UIs and the engine. The model sees
// only the content.
type ResultStatus string

// Result statuses.
const (
	ResultOK        ResultStatus = "ok"
	ResultError     ResultStatus = "error"
	ResultAborted   ResultStatus = "aborted"
	ResultNotRun    ResultStatus = "not_run"
	ResultDuplicate ResultStatus = "duplicate"
	ResultPending   ResultStatus = "pending"
)

// Result answers exactly one call.
type Result struct {
	CallID  string       `json:"call_id"`
	Name    string       `json:"name"`
	Content string       `json:"content"`
	Status  ResultStatus `json:"status,omitempty"`
	// Meta is structured data for UIs (a diff, an ask_user card); it is not
	// sent to the model.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// IsError reports whether the result tells the model something went wrong.
func (r *Result) IsError() bool {
	return r.Status != "" && r.Status != ResultOK && r.Status != ResultPending
}

// UserText returns a user input item holding text.
func UserText(text string) Item {
	return Item{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: text}}}
}

// Directive returns a user-role directive item.
func Directive(text string) Item {
	return Item{Role: RoleUser, Origin: OriginDirective, Parts: []Part{{Kind: PartText, Text: text}}}
}

// ToolResult returns a tool item answering one call.
func ToolResult(r Result) Item {
	// One allocation for the part and the result: every call of every
	// round makes one of these.
	b := &struct {
		p [1]Part
		r Result
	}{r: r}
	b.p[0] = Part{Kind: PartResult, Result: &b.r}
	return Item{Role: RoleTool, Parts: b.p[:]}
}

// Text returns the concatenated text parts of the item.
func (it *Item) Text() string {
	var n int
	var only string
	for i := range it.Parts {
		if it.Parts[i].Kind == PartText {
			n++
			only = it.Parts[i].Text
		}
	}
	if n <= 1 {
		return only
	}
	b := make([]byte, 0, 64)
	for i := range it.Parts {
		if it.Parts[i].Kind == PartText {
			b = append(b, it.Parts[i].Text...)
		}
	}
	return string(b)
}

// Calls returns the calls of an assistant item in order.
func (it *Item) Calls() []*Call {
	var out []*Call
	for i := range it.Parts {
		if it.Parts[i].Kind == PartCall && it.Parts[i].Call != nil {
			out = append(out, it.Parts[i].Call)
		}
	}
	return out
}

// Result returns the result of a tool item, or nil.
func (it *Item) Result() *Result {
	for i := range it.Parts {
		if it.Parts[i].Kind == PartResult {
			return it.Parts[i].Result
		}
	}
	return nil
}
