package undo_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
	"github.com/reinhq/rein/undo"
)

// fixture is a workspace, a store holding one thread, and the workspace's
// file tools tracked for undo.
type fixture struct {
	t      testing.TB
	dir    string
	ws     *sandbox.Workspace
	st     *store.Store
	thread string
	tr     *undo.Tracker
	tools  map[string]tool.Tool
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	th, err := st.CreateThread(context.Background(), record.Thread{Settings: record.Settings{Workspace: dir}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: dir, ws: ws, st: st, thread: th.ID, tr: undo.NewTracker(ws, st), tools: map[string]tool.Tool{}}
	for _, tl := range fs.Tools(ws) {
		f.tools[tl.Spec().Name] = f.tr.Wrap(tl)
	}
	return f
}

func (f *fixture) call(turn, name string, args map[string]any) tool.Output {
	f.t.Helper()
	raw, _ := json.Marshal(args)
	out, err := f.tools[name].Run(context.Background(), tool.Call{ID: "c", Name: name, Args: raw, ThreadID: f.thread, TurnID: turn, Partial: &strings.Builder{}})
	if err != nil || out.Failed {
		f.t.Fatalf("%s %v: %v %q", name, args, err, out.Text)
	}
	return out
}

func (f *fixture) write(name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	return string(b), err == nil
}

func (f *fixture) restore(o undo.Options) (*undo.Result, error) {
	return undo.Restore(context.Background(), f.ws, f.st, f.thread, o)
}

func TestRestorePutsBackWhatTheTurnChanged(t *testing.T) {
	f := newFixture(t)
	f.write("keep.txt", "original\n")
	f.call("turn_1", "edit_file", map[string]any{"path": "keep.txt", "old_string": "original", "new_string": "edited"})
	// A second write in the turn does not replace the before-image.
	f.call("turn_1", "write_file", map[string]any{"path": "keep.txt", "content": "rewritten\n"})
	f.call("turn_1", "write_file", map[string]any{"path": "dir/new.txt", "content": "created\n"})

	r, err := f.restore(undo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.read("keep.txt"); got != "original\n" {
		t.Errorf("keep.txt = %q, want its content before the turn", got)
	}
	if _, ok := f.read("dir/new.txt"); ok {
		t.Errorf("dir/new.txt is still there; the turn created it")
	}
	if r.Turn != "turn_1" || !slices.Equal(r.Restored, []string{"keep.txt"}) || !slices.Equal(r.Removed, []string{"dir/new.txt"}) || r.Untracked {
		t.Errorf("result %+v", r)
	}
	if _, err := f.restore(undo.Options{}); !errors.Is(err, undo.ErrNothing) {
		t.Errorf("a second undo: %v; want ErrNothing (the turn is undone)", err)
	}
	if _, err := f.restore(undo.Options{Turn: "turn_1"}); !errors.Is(err, undo.ErrNothing) {
		t.Errorf("undo of an undone turn: %v; want ErrNothing", err)
	}
}

func TestRestoreNeverOverwritesAFileChangedAfterTheTurn(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "a before\n")
	f.write("b.txt", "b before\n")
	f.call("turn_1", "write_file", map[string]any{"path": "a.txt", "content": "a by the turn\n"})
	f.call("turn_1", "write_file", map[string]any{"path": "b.txt", "content": "b by the turn\n"})
	f.call("turn_1", "write_file", map[string]any{"path": "c.txt", "content": "c by the turn\n"})
	// The user edits a.txt and deletes c.txt after the turn.
	f.write("a.txt", "the user's work\n")
	os.Remove(filepath.Join(f.dir, "c.txt"))

	_, err := f.restore(undo.Options{})
	var ce *undo.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("undo over a changed file: %v; want a *ConflictError", err)
	}
	var paths []string
	for _, c := range ce.Conflicts {
		paths = append(paths, c.Path)
	}
	if !slices.Equal(paths, []string{"a.txt", "c.txt"}) || !strings.Contains(err.Error(), "a.txt (changed after the turn)") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("conflicts %v, error %q", paths, err)
	}
	// Nothing was restored, not even the unchanged b.txt.
	if got, _ := f.read("a.txt"); got != "the user's work\n" {
		t.Errorf("a.txt = %q; the user's change was overwritten", got)
	}
	if got, _ := f.read("b.txt"); got != "b by the turn\n" {
		t.Errorf("b.txt = %q; a refused undo restored part of the turn", got)
	}
	r, err := f.restore(undo.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.read("a.txt"); got != "a before\n" {
		t.Errorf("forced: a.txt = %q", got)
	}
	if got, _ := f.read("b.txt"); got != "b before\n" {
		t.Errorf("forced: b.txt = %q", got)
	}
	if !slices.Equal(r.Overwritten, []string{"a.txt", "c.txt"}) {
		t.Errorf("forced: overwritten %v", r.Overwritten)
	}
}

func TestRestoreGoesBackTurnByTurn(t *testing.T) {
	f := newFixture(t)
	f.write("x.txt", "v0\n")
	f.call("turn_1", "write_file", map[string]any{"path": "x.txt", "content": "v1\n"})
	f.call("turn_2", "write_file", map[string]any{"path": "x.txt", "content": "v2\n"})
	// Undoing the earlier turn first would lose turn 2's change: refused.
	if _, err := f.restore(undo.Options{Turn: "turn_1"}); err == nil {
		t.Fatal("undo of turn 1 under turn 2's change was not refused")
	}
	for _, want := range []string{"v1\n", "v0\n"} {
		if _, err := f.restore(undo.Options{}); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.read("x.txt"); got != want {
			t.Fatalf("x.txt = %q, want %q", got, want)
		}
	}
}

func TestTooLargeBeforeImageIsNotKeptAndSaysSo(t *testing.T) {
	f := newFixture(t)
	f.tr.MaxFile = 10
	f.write("big.txt", "more than ten bytes\n")
	out := f.call("turn_1", "write_file", map[string]any{"path": "big.txt", "content": "small\n"})
	if !strings.Contains(out.Text, "undoing this turn will not restore it") {
		t.Errorf("the result does not say the file cannot be undone: %q", out.Text)
	}
	f.call("turn_1", "write_file", map[string]any{"path": "new.txt", "content": "n\n"})
	_, err := f.restore(undo.Options{})
	if err == nil || !strings.Contains(err.Error(), "big.txt (its content before the turn was too large to keep") {
		t.Fatalf("undo: %v; want a refusal naming big.txt", err)
	}
	r, err := f.restore(undo.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Skipped, []string{"big.txt"}) || !slices.Equal(r.Removed, []string{"new.txt"}) {
		t.Errorf("forced: %+v", r)
	}
	if got, _ := f.read("big.txt"); got != "small\n" {
		t.Errorf("big.txt = %q; it cannot be restored and must be left", got)
	}
}

// fakeExec stands in for exec: it writes a file the tracker cannot see.
type fakeExec struct{ dir string }

func (fakeExec) Spec() tool.Spec { return tool.Spec{Name: "exec", Access: tool.Mutating} }
func (x fakeExec) Run(context.Context, tool.Call) (tool.Output, error) {
	return tool.Output{Text: "ok"}, os.WriteFile(filepath.Join(x.dir, "by-exec.txt"), []byte("x"), 0o644)
}

func TestATurnThatRanCommandsSaysTheyAreNotTracked(t *testing.T) {
	f := newFixture(t)
	ex := f.tr.Wrap(fakeExec{f.dir})
	if _, err := ex.Run(context.Background(), tool.Call{Name: "exec", Args: json.RawMessage(`{}`), ThreadID: f.thread, TurnID: "turn_1"}); err != nil {
		t.Fatal(err)
	}
	f.call("turn_1", "write_file", map[string]any{"path": "a.txt", "content": "a\n"})
	r, err := f.restore(undo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Untracked || !strings.Contains(r.Summary(), "ran commands (exec)") {
		t.Errorf("result %+v, summary %q; want it to say exec is not tracked", r, r.Summary())
	}
	if _, ok := f.read("by-exec.txt"); !ok {
		t.Errorf("undo removed a file exec wrote; it cannot know it")
	}
}

func TestWrappedToolsKeepTheirKeys(t *testing.T) {
	f := newFixture(t)
	for _, tl := range fs.Tools(f.ws) {
		w := f.tr.Wrap(tl)
		args := json.RawMessage(`{"path":"a/b.txt","content":"x","old_string":"a","new_string":"b"}`)
		if got, want := tool.KeysOf(w, args), tool.KeysOf(tl, args); !slices.Equal(got.Writes, want.Writes) || !slices.Equal(got.Reads, want.Reads) || got.Exclusive != want.Exclusive {
			t.Errorf("%s: keys %+v, want %+v", tl.Spec().Name, got, want)
		}
	}
}
