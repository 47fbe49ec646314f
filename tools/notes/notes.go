// Package notes is notebooks as tools (DESIGN §7.3): list_notebook lists
// the user's notebooks or the records of one, write_note appends a record
// (optionally with the last turns of the conversation) or edits one by id.
// Both are mounted when the user has a notebook (Gate).
//
// Notebooks have a scope, as memory does: the workspace's or the user's
// (seen from every workspace). The tools see both, each notebook marked;
// a note goes to the notebook named, in its own scope. Notebooks are made
// by the user (`rein notes new [--scope user] NAME`).
package notes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// Store is the notebooks the tools use; *store.Store is one.
type Store interface {
	Notebooks(ctx context.Context, scopes []string) ([]store.Notebook, error)
	NotebookCount(ctx context.Context, scopes []string) (int, error)
	Notes(ctx context.Context, scopes []string, notebook string) ([]store.Note, error)
	AddNote(ctx context.Context, scopes []string, n store.Note) (store.Note, error)
	EditNote(ctx context.Context, scopes []string, notebook, id string, e store.NoteEdit) (store.Note, error)
}

// History returns a thread's items, oldest first, the current turn's so
// far included; (*store.Store).Items is one.
type History func(ctx context.Context, threadID string) ([]llm.Item, error)

// Tool names.
const (
	ListName  = "list_notebook"
	WriteName = "write_note"
)

// Limits.
const (
	// DefaultTurns is how many turns write_note includes when not told.
	DefaultTurns = 3
	// maxPreview bounds a record's text in list_notebook, in runes.
	maxPreview = 600
	// maxTurnText bounds one message in an included transcript, in runes.
	maxTurnText = 4000
	// PromptEntries is how many notebooks the prompt block lists.
	PromptEntries = 30
	// MaxTitle bounds a record's title, in characters.
	MaxTitle = 200
	// MaxContent bounds what a call writes into a record (content and
	// note together), in characters: a record is a finding, not a dump.
	MaxContent = 16000
	// MaxRecord bounds a whole record, the included turns with it, in
	// characters.
	MaxRecord = 64000
)

// bounded says, in a message for the model, which of a record's parts is
// over its limit; "" when none is.
func bounded(title, content string) string {
	if n := utf8.RuneCountInString(title); n > MaxTitle {
		return fmt.Sprintf("title has %d characters; a title holds at most %d: shorten it", n, MaxTitle)
	}
	if n := utf8.RuneCountInString(content); n > MaxContent {
		return fmt.Sprintf("content has %d characters (with the note); a record holds at most %d you write: keep the finding, not the whole text", n, MaxContent)
	}
	return ""
}

// key is the resource key of a notebook; allKey is read by listing every
// notebook and written by every note, since counts change.
func key(id string) string { return "notebook:" + id }

const allKey = "notebooks"

type listInput struct {
	NotebookID string `json:"notebook_id,omitempty" jsonschema:"the notebook whose records to list; leave out to list the notebooks"`
}

// List returns the list_notebook tool of a turn in the workspace ws (its
// directory, links resolved; it sees the user's notebooks and ws's); nbs
// are the notebooks offered in its schema.
func List(st Store, ws string, nbs []store.Notebook) tool.Tool {
	t := tool.New(ListName,
		"List the user's notebooks (each marked workspace: this workspace's, or user: every workspace's), or the records of one notebook (id, title, text)."+available(nbs),
		func(ctx context.Context, in listInput) (tool.Output, error) { return list(ctx, st, ws, in) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithKeys(func(in listInput) tool.Keys {
			if in.NotebookID == "" {
				return tool.Keys{Reads: []string{allKey}}
			}
			return tool.Keys{Reads: []string{key(in.NotebookID)}}
		}))
	return withEnum(t, "notebook_id", ids(nbs))
}

func list(ctx context.Context, st Store, ws string, in listInput) (tool.Output, error) {
	if in.NotebookID == "" {
		nbs, err := st.Notebooks(ctx, store.Visible(ws))
		if err != nil {
			return tool.Output{}, err
		}
		if len(nbs) == 0 {
			return tool.Text("no notebooks"), nil
		}
		var b strings.Builder
		for _, nb := range nbs {
			fmt.Fprintf(&b, "%s = %s (%s, %d records)\n", nb.ID, nb.Name, store.ScopeName(nb.Workspace), nb.Records)
		}
		return tool.Text(strings.TrimRight(b.String(), "\n")), nil
	}
	ns, err := st.Notes(ctx, store.Visible(ws), in.NotebookID)
	if errors.Is(err, store.ErrNotFound) {
		return failed(fmt.Sprintf("no notebook %q; call list_notebook without notebook_id to see them", in.NotebookID))
	}
	if err != nil {
		return tool.Output{}, err
	}
	if len(ns) == 0 {
		return tool.Textf("notebook %s has no records yet", in.NotebookID), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d records in %s, oldest first:\n", len(ns), in.NotebookID)
	for _, n := range ns {
		fmt.Fprintf(&b, "\n[%s] %s (%s)\n%s\n", n.ID, n.Title, n.Updated.Format("2006-01-02 15:04"), cut(n.Content, maxPreview))
	}
	return tool.Text(strings.TrimRight(b.String(), "\n")), nil
}

type writeInput struct {
	Mode       string `json:"mode" jsonschema:"append a new record, or edit the record record_id"`
	NotebookID string `json:"notebook_id" jsonschema:"the notebook to write to"`
	RecordID   string `json:"record_id,omitempty" jsonschema:"the record to edit, such as r4 (mode edit)"`
	Title      string `json:"title,omitempty" jsonschema:"the record's title (at most 200 characters)"`
	Content    string `json:"content,omitempty" jsonschema:"the record's text (mode edit: replaces it); at most 16000 characters with the note"`
	Turns      string `json:"turns_to_include,omitempty" jsonschema:"append: how many of the conversation's last turns to include verbatim, a number or all (default 3; 0 for none)"`
	Note       string `json:"note,omitempty" jsonschema:"append: a remark added after the content"`
}

// writeNote is the write_note tool. It is not a tool.New tool because it
// needs the call's thread, to include the conversation's last turns.
type writeNote struct {
	spec    tool.Spec
	st      Store
	scopes  []string
	history History
	// ask: a write to a user's notebook needs the user's approval.
	ask bool
}

// Options say how write_note treats the user's notebooks.
type Options struct {
	// UserUnasked lets a write to one of the user's notebooks (seen from
	// every workspace) run without the user's approval. By default each
	// one asks (tool.CallApprover): a repository that talks the model into
	// it would reach every other workspace. Full-access mode, where the
	// user chose to be asked nothing, sets it.
	UserUnasked bool
}

// UserWriteReason is why a write to a user's notebook waits for the
// user's approval: the approval box says it.
const UserWriteReason = "This writes to one of your user notebooks, which are global: every workspace sees them."

// Write returns the write_note tool of a turn in the workspace ws (it
// writes to the user's notebooks and ws's); nbs are the notebooks offered
// in its schema, history reads the thread of a call (nil includes no
// turns). A call writing to a user's notebook needs the user's approval,
// unless o says otherwise.
func Write(st Store, ws string, nbs []store.Notebook, history History, o Options) tool.Tool {
	t := tool.New(WriteName,
		"Write to one of the user's notebooks: append a new record (title, content, and by default the last 3 turns of this conversation), "+
			"or edit a record's title or content by id."+available(nbs),
		func(context.Context, writeInput) (tool.Output, error) { return tool.Output{}, nil },
		tool.WithAccess(tool.Mutating))
	spec := withEnum(t, "notebook_id", ids(nbs)).Spec()
	return &writeNote{spec: spec, st: st, scopes: store.Visible(ws), history: history, ask: !o.UserUnasked}
}

// ApprovalFor implements tool.CallApprover: a write to a notebook of the
// user's scope asks, and so does one to a notebook that cannot be found as
// the workspace's (it fails closed). The notebook is found as the store
// finds it: by id first, then by name, the workspace's before the user's.
func (w *writeNote) ApprovalFor(ctx context.Context, args json.RawMessage) string {
	if !w.ask {
		return ""
	}
	var in writeInput
	if json.Unmarshal(args, &in) != nil {
		return UserWriteReason
	}
	nbs, err := w.st.Notebooks(ctx, w.scopes)
	if err != nil {
		return UserWriteReason
	}
	var byName *store.Notebook
	for i, nb := range nbs {
		if nb.ID == in.NotebookID {
			byName = &nbs[i]
			break
		}
		if nb.Name == in.NotebookID && (byName == nil || byName.Workspace == store.UserScope) {
			byName = &nbs[i]
		}
	}
	if byName == nil || byName.Workspace == store.UserScope {
		return UserWriteReason
	}
	return ""
}

func (w *writeNote) Spec() tool.Spec { return w.spec }

// Keys implements tool.Keyer: a note writes its notebook, and the list of
// notebooks (whose counts change).
func (w *writeNote) Keys(args json.RawMessage) tool.Keys {
	var in writeInput
	if err := json.Unmarshal(args, &in); err != nil || in.NotebookID == "" {
		return tool.Keys{Exclusive: true}
	}
	return tool.Keys{Writes: []string{key(in.NotebookID), allKey}}
}

func (w *writeNote) Run(ctx context.Context, call tool.Call) (tool.Output, error) {
	var in writeInput
	dec := json.NewDecoder(bytes.NewReader(call.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return failed("invalid arguments for write_note: " + err.Error())
	}
	if in.NotebookID == "" {
		return failed("notebook_id is empty; list_notebook shows the notebooks")
	}
	switch in.Mode {
	case "append":
		return w.append(ctx, call.ThreadID, in)
	case "edit":
		return w.edit(ctx, in)
	default:
		return failed(fmt.Sprintf(`mode %q: use "append" or "edit"`, in.Mode))
	}
}

func (w *writeNote) append(ctx context.Context, thread string, in writeInput) (tool.Output, error) {
	if in.RecordID != "" {
		return failed(`record_id is for mode "edit"; to append, leave it out`)
	}
	turns, err := parseTurns(in.Turns)
	if err != nil {
		return failed(err.Error())
	}
	content := strings.TrimSpace(in.Content)
	if n := strings.TrimSpace(in.Note); n != "" {
		content = strings.TrimSpace(content + "\n\nNote: " + n)
	}
	if msg := bounded(strings.TrimSpace(in.Title), content); msg != "" {
		return failed(msg)
	}
	included := 0
	if turns != 0 && w.history != nil && thread != "" {
		items, err := w.history(ctx, thread)
		if err != nil {
			return tool.Output{}, fmt.Errorf("reading the conversation: %w", err)
		}
		var tr string
		tr, included = Transcript(items, turns)
		if tr != "" {
			content = strings.TrimSpace(content + "\n\n" + tr)
		}
	}
	if content == "" && strings.TrimSpace(in.Title) == "" {
		return failed("nothing to write: give a title or content (or include turns of a conversation that has some)")
	}
	if n := utf8.RuneCountInString(content); n > MaxRecord {
		return failed(fmt.Sprintf("the record would have %d characters with the last %d turns; a record holds at most %d: include fewer turns (turns_to_include)", n, included, MaxRecord))
	}
	n, err := w.st.AddNote(ctx, w.scopes, store.Note{Notebook: in.NotebookID, Title: strings.TrimSpace(in.Title), Content: content, Thread: thread})
	if errors.Is(err, store.ErrNotFound) {
		return failed(fmt.Sprintf("no notebook %q; list_notebook shows the notebooks", in.NotebookID))
	}
	if err != nil {
		return tool.Output{}, err
	}
	msg := fmt.Sprintf("appended [%s] to %s", n.ID, in.NotebookID)
	if included > 0 {
		msg += fmt.Sprintf(" with the last %d turns", included)
	}
	return tool.Text(msg), nil
}

func (w *writeNote) edit(ctx context.Context, in writeInput) (tool.Output, error) {
	if in.RecordID == "" {
		return failed(`mode "edit" needs record_id; list_notebook shows the records`)
	}
	var e store.NoteEdit
	if in.Title != "" {
		e.Title = &in.Title
	}
	if in.Content != "" {
		e.Content = &in.Content
	}
	if e.Title == nil && e.Content == nil {
		return failed("nothing to change: give a new title or content")
	}
	if msg := bounded(in.Title, in.Content); msg != "" {
		return failed(msg)
	}
	n, err := w.st.EditNote(ctx, w.scopes, in.NotebookID, in.RecordID, e)
	if errors.Is(err, store.ErrNotFound) {
		return failed(fmt.Sprintf("no record %q in notebook %q; list_notebook with notebook_id shows them", in.RecordID, in.NotebookID))
	}
	if err != nil {
		return tool.Output{}, err
	}
	return tool.Textf("edited [%s] in %s", n.ID, in.NotebookID), nil
}

// parseTurns reads turns_to_include: empty for the default, "all" for -1.
func parseTurns(s string) (int, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "":
		return DefaultTurns, nil
	case "all":
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf(`turns_to_include %q: give a number of turns (0 for none) or "all"`, s)
	}
	return n, nil
}

// Gate computes has_notebooks for a turn in the workspace ws: on when the
// user or ws has a notebook. A store that cannot be read is an error, so
// the gate fails closed.
func Gate(st Store, ws string) tool.Gate {
	return func(ctx context.Context) (bool, error) {
		if st == nil {
			return false, errors.New("no notebook store")
		}
		n, err := st.NotebookCount(ctx, store.Visible(ws))
		return n > 0, err
	}
}

// Prompt is the notebooks block of the system prompt: at most
// PromptEntries notebooks, then how many more.
func Prompt(nbs []store.Notebook) string {
	if len(nbs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The user's notebooks (write_note adds records, list_notebook reads them; " +
		"workspace: this workspace's, user: every workspace's):\n")
	for i, nb := range nbs {
		if i == PromptEntries {
			fmt.Fprintf(&b, "+%d more; call list_notebook\n", len(nbs)-i)
			break
		}
		fmt.Fprintf(&b, "- %s = %s (%s, %d records)\n", nb.ID, nb.Name, store.ScopeName(nb.Workspace), nb.Records)
	}
	return strings.TrimRight(b.String(), "\n")
}

func available(nbs []store.Notebook) string {
	if len(nbs) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(nbs), PromptEntries))
	for i, nb := range nbs {
		if i == PromptEntries {
			break
		}
		parts = append(parts, nb.ID+" = "+nb.Name)
	}
	return " Available: " + strings.Join(parts, "; ") + "."
}

func ids(nbs []store.Notebook) []string {
	out := make([]string, len(nbs))
	for i, nb := range nbs {
		out[i] = nb.ID
	}
	return out
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func failed(msg string) (tool.Output, error) { return tool.Output{Text: msg, Failed: true}, nil }
