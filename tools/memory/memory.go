// Package memory is the user's durable memory as tools (DESIGN §7.3):
// read_memory lists what was saved, write_memory adds an entry or edits one
// by id, and duplicates are reported as already saved rather than stored
// twice. read_memory is mounted only when the memory is non-empty (Gate).
//
// The memory has two scopes, as Claude Code keeps project and user memory:
// the workspace's (the default) and the user's, seen from every workspace.
// The tools read both, each entry marked, and write to the workspace's
// unless told scope "user".
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// Store is the memory the tools use; *store.Store is one.
type Store interface {
	Memories(ctx context.Context, scopes []string) ([]store.Memory, error)
	MemoryCount(ctx context.Context, scopes []string) (int, error)
	AddMemory(ctx context.Context, scope, text string) (store.Memory, bool, error)
	EditMemory(ctx context.Context, scopes []string, id, text string) (store.Memory, error)
}

// Tool names.
const (
	ReadName  = "read_memory"
	WriteName = "write_memory"
)

// Key is the resource key of the memory: reads and writes of one round run
// in call order.
const Key = "memory"

// MaxText is the longest entry accepted; entries are meant to be one
// preference or fact (about 240 characters is advised).
const MaxText = 1000

// CheckText says what is wrong with an entry's text (trimmed), in words
// for whoever wrote it: empty, or over MaxText. Every way in (the tool,
// `rein memory add`) checks it.
func CheckText(text string) error {
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return errors.New("text is empty; write the preference or fact to remember")
	case n > MaxText:
		return fmt.Errorf("text has %d characters; keep an entry under the limit of %d characters (about 240 is best): one preference or fact", n, MaxText)
	}
	return nil
}

type readInput struct{}

// Read returns the read_memory tool of a turn in the workspace ws (its
// directory, links resolved): the user's entries and ws's.
func Read(st Store, ws string) tool.Tool {
	return tool.New(ReadName,
		"Read the user's saved memory: preferences and facts kept across conversations, each with its id (m1, m2, …) "+
			"and its scope (workspace: this workspace only; user: every workspace).",
		func(ctx context.Context, _ readInput) (tool.Output, error) { return read(ctx, st, ws) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithKeys(func(readInput) tool.Keys { return tool.Keys{Reads: []string{Key}} }))
}

func read(ctx context.Context, st Store, ws string) (tool.Output, error) {
	ms, err := st.Memories(ctx, store.Visible(ws))
	if err != nil {
		return tool.Output{}, err
	}
	if len(ms) == 0 {
		return tool.Text("the memory is empty"), nil
	}
	return tool.Text(Format(ms)), nil
}

// Format lists entries one a line as "[id] (scope) text", the scope
// "workspace" or "user".
func Format(ms []store.Memory) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "[%s] (%s) %s\n", m.ID, store.ScopeName(m.Workspace), oneLine(m.Text))
	}
	return strings.TrimRight(b.String(), "\n")
}

type writeInput struct {
	Op       string `json:"op" jsonschema:"add a new entry, or edit the entry target_id"`
	Text     string `json:"text" jsonschema:"the preference or fact, one short sentence (about 240 characters at most)"`
	TargetID string `json:"target_id,omitempty" jsonschema:"the id of the entry to edit, such as m3 (op edit)"`
	Reason   string `json:"reason,omitempty" jsonschema:"why it is worth remembering"`
	Scope    string `json:"scope,omitempty" jsonschema:"op add: workspace (the default) keeps it for this workspace only; user keeps it for every workspace (a preference about the user rather than this project)"`
}

// Scopes write_memory accepts.
const (
	ScopeWorkspace = "workspace"
	ScopeUser      = "user"
)

// Options say how the writing tools treat the user's scope.
type Options struct {
	// UserUnasked lets a write to the user's scope run without the user's
	// approval. By default each one asks (tool.CallApprover), since what
	// it writes every workspace's system prompt carries: a repository
	// that talks the model into it would reach every other workspace.
	// Full-access mode, where the user chose to be asked nothing, sets it.
	UserUnasked bool
}

// Write returns the write_memory tool of a turn in the workspace ws (its
// directory, links resolved): it adds to ws's scope unless told "user",
// and edits only entries a turn in ws sees. A call that adds to the
// user's scope or edits one of its entries needs the user's approval,
// unless o says otherwise.
func Write(st Store, ws string, o Options) tool.Tool {
	t := tool.New(WriteName,
		"Save an explicit, lasting user preference or fact to the memory (op add), or correct a saved one by id (op edit). "+
			"An entry is kept for this workspace unless scope is user (for every workspace; the user is asked to approve it). "+
			"Save only what the user would want remembered in later conversations; never secrets.",
		func(ctx context.Context, in writeInput) (tool.Output, error) { return write(ctx, st, ws, in) },
		tool.WithAccess(tool.Mutating),
		tool.WithKeys(func(writeInput) tool.Keys { return tool.Keys{Writes: []string{Key}} }))
	if o.UserUnasked {
		return t
	}
	return &askingWrite{Tool: t, st: st, ws: ws}
}

// UserWriteReason is why a write to the user's memory waits for the
// user's approval: the approval box says it.
const UserWriteReason = "This writes to your user memory, which is global: every workspace's system prompt will carry the text."

// askingWrite is write_memory asking the user's approval for the calls
// that write the user's scope.
type askingWrite struct {
	tool.Tool
	st Store
	ws string
}

// Keys forwards to the tool, which declares the memory's key.
func (w *askingWrite) Keys(args json.RawMessage) tool.Keys { return tool.KeysOf(w.Tool, args) }

// ApprovalFor implements tool.CallApprover: an add to the user's scope
// asks, and so does an edit of an entry not known to be the workspace's
// (the user's, or one that cannot be looked up: it fails closed).
func (w *askingWrite) ApprovalFor(ctx context.Context, args json.RawMessage) string {
	var in writeInput
	if json.Unmarshal(args, &in) != nil {
		return UserWriteReason
	}
	if in.Scope == ScopeUser {
		return UserWriteReason
	}
	if in.Op != "edit" {
		return ""
	}
	ms, err := w.st.Memories(ctx, store.Visible(w.ws))
	if err != nil {
		return UserWriteReason
	}
	for _, m := range ms {
		if m.ID == in.TargetID && m.Workspace != store.UserScope {
			return ""
		}
	}
	return UserWriteReason
}

func write(ctx context.Context, st Store, ws string, in writeInput) (tool.Output, error) {
	text := strings.TrimSpace(in.Text)
	if err := CheckText(text); err != nil {
		return failed(err.Error())
	}
	scope := ws
	switch in.Scope {
	case "", ScopeWorkspace:
	case ScopeUser:
		scope = store.UserScope
	default:
		return failed(fmt.Sprintf(`scope %q: use "workspace" (the default) or "user"`, in.Scope))
	}
	switch in.Op {
	case "add":
		if in.TargetID != "" {
			return failed(`target_id is for op "edit"; to add, leave it out`)
		}
		m, dup, err := st.AddMemory(ctx, scope, text)
		if err != nil {
			return tool.Output{}, err
		}
		if dup {
			return tool.Textf("already saved as [%s] (%s) %s; nothing changed", m.ID, store.ScopeName(m.Workspace), oneLine(m.Text)), nil
		}
		return tool.Textf("saved as [%s] (%s)", m.ID, store.ScopeName(m.Workspace)), nil
	case "edit":
		if in.TargetID == "" {
			return failed(`op "edit" needs target_id, the id of the entry (read_memory lists them)`)
		}
		if in.Scope != "" {
			return failed(`scope is for op "add"; an edited entry keeps its scope`)
		}
		m, err := st.EditMemory(ctx, store.Visible(ws), in.TargetID, text)
		switch {
		case errors.Is(err, store.ErrDuplicate):
			return tool.Textf("not changed: %v", err), nil
		case errors.Is(err, store.ErrNotFound):
			return failed(fmt.Sprintf("no memory entry %q; read_memory lists the ids", in.TargetID))
		case err != nil:
			return tool.Output{}, err
		}
		return tool.Textf("[%s] now says: %s", m.ID, oneLine(m.Text)), nil
	default:
		return failed(fmt.Sprintf(`op %q: use "add" or "edit"`, in.Op))
	}
}

// Gate computes has_memory for a turn in the workspace ws: on when the
// user's memory or ws's holds an entry. A store that cannot be read is an
// error, so the gate fails closed.
func Gate(st Store, ws string) tool.Gate {
	return func(ctx context.Context) (bool, error) {
		if st == nil {
			return false, errors.New("no memory store")
		}
		n, err := st.MemoryCount(ctx, store.Visible(ws))
		return n > 0, err
	}
}

// Prompt is the memory block of the system prompt: the entries, each
// marked with its scope, up to max characters, then how many more there
// are. It is empty when the memory is.
func Prompt(ms []store.Memory, max int) string {
	if len(ms) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("What the user asked you to remember (read_memory lists it, write_memory changes it):\n")
	for i, m := range ms {
		line := fmt.Sprintf("- [%s] (%s) %s\n", m.ID, store.ScopeName(m.Workspace), oneLine(m.Text))
		if b.Len()+len(line) > max {
			fmt.Fprintf(&b, "- … %d more; call read_memory\n", len(ms)-i)
			break
		}
		b.WriteString(line)
	}
	return strings.TrimRight(b.String(), "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func failed(msg string) (tool.Output, error) { return tool.Output{Text: msg, Failed: true}, nil }
