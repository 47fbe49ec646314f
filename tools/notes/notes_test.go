package notes

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/record"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/kb"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func item(turn, id string, role llm.Role, origin llm.Origin, text string, calls ...llm.Call) llm.Item {
	it := llm.Item{ID: id, TurnID: turn, Role: role, Origin: origin}
	if text != "" {
		it.Parts = append(it.Parts, llm.Part{Kind: llm.PartText, Text: text})
	}
	for i := range calls {
		it.Parts = append(it.Parts, llm.Part{Kind: llm.PartCall, Call: &calls[i]})
	}
	return it
}

// conversation records four turns in a new thread and returns its id.
func conversation(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	th, err := st.CreateThread(ctx, record.Thread{})
	if err != nil {
		t.Fatal(err)
	}
	call := llm.Call{ID: "c1", Name: "rag", Args: `{}`}
	items := []llm.Item{
		item("t1", "i1", llm.RoleUser, llm.OriginInput, "first question"),
		item("t1", "i2", llm.RoleAssistant, llm.OriginInput, "first answer"),
		item("t2", "i3", llm.RoleUser, llm.OriginInput, "second question\n\n"+kb.SeedHeader+"\n\n## docs\nseeded passage"),
		item("t2", "i4", llm.RoleAssistant, llm.OriginInput, "let me look", call),
		{ID: "i5", TurnID: "t2", Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &llm.Result{CallID: "c1", Name: "rag", Content: "tool output"}}}},
		item("t2", "i6", llm.RoleUser, llm.OriginDirective, "settle now"),
		item("t2", "i7", llm.RoleAssistant, llm.OriginInput, "second answer"),
		item("t3", "i8", llm.RoleUser, llm.OriginInput, "third question"),
		item("t3", "i9", llm.RoleAssistant, llm.OriginInput, "third answer"),
		item("t4", "i10", llm.RoleUser, llm.OriginInput, "fourth question"),
	}
	for _, it := range items {
		if err := st.Record(ctx, th.ID, it); err != nil {
			t.Fatal(err)
		}
	}
	return th.ID
}

func run(t *testing.T, tl tool.Tool, thread, args string) tool.Output {
	t.Helper()
	out, err := tl.Run(context.Background(), tool.Call{ThreadID: thread, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s(%s): %v", tl.Spec().Name, args, err)
	}
	return out
}

func TestWriteNoteAppendsAndEdits(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	nb, err := st.CreateNotebook(ctx, store.UserScope, "research")
	if err != nil {
		t.Fatal(err)
	}
	thread := conversation(t, st)
	nbs, _ := st.Notebooks(ctx, store.Visible(testWS))
	w := Write(st, testWS, nbs, st.Items, Options{})
	id := nb.ID
	steps := []struct {
		args   string
		want   string
		failed bool
	}{
		{`{"mode":"append","notebook_id":"` + id + `","title":"Findings","content":"Backoff doubles.","note":"check later"}`, "appended [r1] to " + id + " with the last 3 turns", false},
		{`{"mode":"append","notebook_id":"` + id + `","title":"Bare","turns_to_include":"0"}`, "appended [r2]", false},
		{`{"mode":"append","notebook_id":"` + id + `","content":"all","turns_to_include":"all"}`, "with the last 4 turns", false},
		{`{"mode":"edit","notebook_id":"` + id + `","record_id":"r2","content":"filled in"}`, "edited [r2]", false},
		{`{"mode":"edit","notebook_id":"` + id + `","record_id":"r9","content":"x"}`, `no record "r9"`, true},
		{`{"mode":"edit","notebook_id":"` + id + `","record_id":"r2"}`, "nothing to change", true},
		{`{"mode":"edit","notebook_id":"` + id + `","content":"x"}`, "needs record_id", true},
		{`{"mode":"append","notebook_id":"` + id + `","record_id":"r1","content":"x"}`, "record_id is for", true},
		{`{"mode":"append","notebook_id":"nb_nope","content":"x"}`, `no notebook "nb_nope"`, true},
		{`{"mode":"append","notebook_id":"` + id + `","content":"x","turns_to_include":"-2"}`, "turns_to_include", true},
		{`{"mode":"append","notebook_id":"` + id + `","turns_to_include":"0"}`, "nothing to write", true},
		{`{"mode":"delete","notebook_id":"` + id + `"}`, `mode "delete"`, true},
		{`{"mode":"append"}`, "notebook_id is empty", true},
		{`{"mode":"append","notebook_id":"x","bogus":1}`, "invalid arguments", true},
	}
	for _, s := range steps {
		out := run(t, w, thread, s.args)
		if out.Failed != s.failed || !strings.Contains(out.Text, s.want) {
			t.Errorf("write_note %s = %+v, want failed=%v and %q", s.args, out, s.failed, s.want)
		}
	}
	ns, err := st.Notes(ctx, store.Visible(testWS), id)
	if err != nil || len(ns) != 3 {
		t.Fatalf("notes = %+v, %v", ns, err)
	}
	r1 := ns[0].Content
	for _, want := range []string{"Backoff doubles.\n\nNote: check later", "User: second question\n", "Assistant: second answer", "User: fourth question"} {
		if !strings.Contains(r1, want) {
			t.Errorf("r1 lacks %q:\n%s", want, r1)
		}
	}
	for _, not := range []string{"first question", "seeded passage", "let me look", "tool output", "settle now"} {
		if strings.Contains(r1, not) {
			t.Errorf("r1 has %q:\n%s", not, r1)
		}
	}
	if ns[0].Thread != thread || ns[1].Content != "filled in" || !strings.Contains(ns[2].Content, "first question") {
		t.Fatalf("notes = %+v", ns)
	}
	// The notebook is the write's key.
	if k := tool.KeysOf(w, json.RawMessage(`{"mode":"append","notebook_id":"`+id+`"}`)); len(k.Writes) != 2 || k.Writes[0] != "notebook:"+id {
		t.Fatalf("keys = %+v", k)
	}
}

func TestListNotebook(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a, _ := st.CreateNotebook(ctx, store.UserScope, "alpha")
	b, _ := st.CreateNotebook(ctx, store.UserScope, "beta")
	if _, err := st.AddNote(ctx, store.Visible(testWS), store.Note{Notebook: a.ID, Title: "T", Content: strings.Repeat("long ", 300)}); err != nil {
		t.Fatal(err)
	}
	nbs, _ := st.Notebooks(ctx, store.Visible(testWS))
	l := List(st, testWS, nbs)
	tests := []struct {
		args   string
		want   []string
		failed bool
	}{
		{`{}`, []string{a.ID + " = alpha (user, 1 records)", b.ID + " = beta (user, 0 records)"}, false},
		{`{"notebook_id":"` + a.ID + `"}`, []string{"1 records in " + a.ID, "[r1] T (", "…"}, false},
		{`{"notebook_id":"` + b.ID + `"}`, []string{"has no records yet"}, false},
		{`{"notebook_id":"nb_x"}`, []string{`no notebook "nb_x"`}, true},
	}
	for _, tc := range tests {
		out := run(t, l, "", tc.args)
		if out.Failed != tc.failed {
			t.Errorf("list_notebook %s = %+v", tc.args, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.Text, w) {
				t.Errorf("list_notebook %s lacks %q:\n%s", tc.args, w, out.Text)
			}
		}
	}
	var schema struct {
		Properties map[string]map[string]any
	}
	json.Unmarshal(l.Spec().Schema, &schema)
	if enum, _ := schema.Properties["notebook_id"]["enum"].([]any); len(enum) != 2 {
		t.Fatalf("notebook_id enum = %v", schema.Properties["notebook_id"])
	}
	if !strings.Contains(l.Spec().Description, "Available: "+a.ID+" = alpha") {
		t.Fatalf("description = %s", l.Spec().Description)
	}
	if _, err := tool.NewValidator(l.Spec()); err != nil {
		t.Fatal(err)
	}
}

func TestGateFromTheStore(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	compose := func() (*tool.Set, *tool.Report) {
		nbs, _ := st.Notebooks(ctx, store.Visible(testWS))
		return tool.Compose(ctx, tool.Composition{
			Registry: tool.NewSet(List(st, testWS, nbs), Write(st, testWS, nbs, st.Items, Options{})),
			Gates:    map[tool.Flag]tool.Gate{tool.HasNotebooks: Gate(st, testWS)},
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}
	if set, _ := compose(); set.Len() != 0 {
		t.Fatalf("no notebooks mounts %v", set.Names())
	}
	if _, err := st.CreateNotebook(ctx, store.UserScope, "n"); err != nil {
		t.Fatal(err)
	}
	if set, _ := compose(); strings.Join(set.Names(), ",") != ListName+","+WriteName {
		t.Fatalf("a notebook mounts %v", set.Names())
	}
	st.Close()
	set, rep := compose()
	if set.Len() != 0 {
		t.Fatalf("mounted after a store error: %v", set.Names())
	}
	for _, f := range rep.Flags {
		if f.Flag == tool.HasNotebooks && f.Err == "" {
			t.Fatalf("has_notebooks = %+v, want an error", f)
		}
	}
}

func TestPromptListsAtMost30(t *testing.T) {
	var nbs []store.Notebook
	for i := range 33 {
		nbs = append(nbs, store.Notebook{ID: "nb_" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Name: "n"})
	}
	p := Prompt(nbs)
	if strings.Count(p, "\n- ") != PromptEntries || !strings.HasSuffix(p, "+3 more; call list_notebook") {
		t.Fatalf("prompt:\n%s", p)
	}
	if Prompt(nil) != "" {
		t.Fatal("a block without notebooks")
	}
}

// testWS is the workspace the tools are built for.
const testWS = "/work/project"

// TestAWriteToAUsersNotebookAsksTheUser checks which write_note calls
// need the user's approval (tool.CallApprover): a write to a notebook of
// the user's scope (seen from every workspace), by id or by name, and to
// a notebook that is not found as this workspace's; a workspace notebook
// (a name both scopes have resolves to it, as the store resolves it) runs
// unasked, and so does everything with UserUnasked. Before, write_note
// never asked.
func TestAWriteToAUsersNotebookAsksTheUser(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	user, err := st.CreateNotebook(ctx, store.UserScope, "research")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.CreateNotebook(ctx, testWS, "todo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateNotebook(ctx, store.UserScope, "todo"); err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateNotebook(ctx, "/work/other", "theirs")
	if err != nil {
		t.Fatal(err)
	}
	nbs, _ := st.Notebooks(ctx, store.Visible(testWS))
	cases := []struct {
		args string
		ask  bool
	}{
		{`{"mode":"append","notebook_id":"` + user.ID + `","content":"x"}`, true},
		{`{"mode":"append","notebook_id":"research","content":"x"}`, true},
		{`{"mode":"edit","notebook_id":"` + user.ID + `","record_id":"r1","content":"x"}`, true},
		{`{"mode":"append","notebook_id":"` + ws.ID + `","content":"x"}`, false},
		{`{"mode":"append","notebook_id":"todo","content":"x"}`, false},
		{`{"mode":"append","notebook_id":"` + other.ID + `","content":"x"}`, true},
		{`{"mode":"append","notebook_id":"nb_nope","content":"x"}`, true},
		{`not json`, true},
	}
	asking := Write(st, testWS, nbs, st.Items, Options{})
	unasked := Write(st, testWS, nbs, st.Items, Options{UserUnasked: true})
	for _, c := range cases {
		why := tool.ApprovalFor(ctx, asking, json.RawMessage(c.args))
		if (why != "") != c.ask {
			t.Errorf("%s: approval %q, want asked=%v", c.args, why, c.ask)
		}
		if c.ask && !strings.Contains(why, "global") {
			t.Errorf("%s: the reason does not say the notebook is global: %q", c.args, why)
		}
		if why := tool.ApprovalFor(ctx, unasked, json.RawMessage(c.args)); why != "" {
			t.Errorf("%s with UserUnasked: asked %q", c.args, why)
		}
	}
}

// TestWriteNoteIsBounded: what a call writes into a record (title;
// content and note), and the whole record with its included turns, are
// bounded, and a call over a bound fails saying the limit, writing
// nothing. Before, a record took whatever the model wrote, and "all" the
// turns of a long thread.
func TestWriteNoteIsBounded(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	nb, err := st.CreateNotebook(ctx, testWS, "research")
	if err != nil {
		t.Fatal(err)
	}
	nbs, _ := st.Notebooks(ctx, store.Visible(testWS))
	// A long thread: 40 turns of 4,000-character messages.
	var long []llm.Item
	for i := range 40 {
		turn := fmt.Sprintf("t%d", i)
		long = append(long,
			item(turn, turn+"u", llm.RoleUser, llm.OriginInput, strings.Repeat("q", 4000)),
			item(turn, turn+"a", llm.RoleAssistant, llm.OriginInput, strings.Repeat("a", 4000)))
	}
	history := func(context.Context, string) ([]llm.Item, error) { return long, nil }
	w := Write(st, testWS, nbs, history, Options{})
	if out := run(t, w, "thread_1", `{"mode":"append","notebook_id":"`+nb.ID+`","content":"kept","turns_to_include":"0"}`); out.Failed {
		t.Fatalf("a small record failed: %+v", out)
	}
	big := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name, args, want string
	}{
		{"content", `{"mode":"append","notebook_id":"` + nb.ID + `","content":"` + big(MaxContent+1) + `","turns_to_include":"0"}`, "at most 16000"},
		{"content and note", `{"mode":"append","notebook_id":"` + nb.ID + `","content":"` + big(MaxContent-5) + `","note":"0123456789","turns_to_include":"0"}`, "at most 16000"},
		{"title", `{"mode":"append","notebook_id":"` + nb.ID + `","title":"` + big(MaxTitle+1) + `","content":"x","turns_to_include":"0"}`, "at most 200"},
		{"every turn of a long thread", `{"mode":"append","notebook_id":"` + nb.ID + `","content":"x","turns_to_include":"all"}`, "at most 64000: include fewer turns"},
		{"edit content", `{"mode":"edit","notebook_id":"` + nb.ID + `","record_id":"r1","content":"` + big(MaxContent+1) + `"}`, "at most 16000"},
		{"edit title", `{"mode":"edit","notebook_id":"` + nb.ID + `","record_id":"r1","title":"` + big(MaxTitle+1) + `"}`, "at most 200"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, w, "thread_1", c.args)
			if !out.Failed || !strings.Contains(out.Text, c.want) {
				t.Errorf("write_note = %.200s (failed %v), want a failure saying %q", out.Text, out.Failed, c.want)
			}
		})
	}
	ns, err := st.Notes(ctx, store.Visible(testWS), nb.ID)
	if err != nil || len(ns) != 1 || ns[0].Content != "kept" {
		t.Fatalf("%d notes after the refused writes (%v), want the one kept", len(ns), err)
	}
	if out := run(t, w, "thread_1", `{"mode":"append","notebook_id":"`+nb.ID+`","content":"x","turns_to_include":"5"}`); out.Failed {
		t.Errorf("five long turns fit a record: %+v", out)
	}
}
