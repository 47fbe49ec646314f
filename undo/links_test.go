package undo_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/undo"
)

// TestRestoreNeverFollowsALinkOutOfTheWorkspace: after the turn, the
// directory it wrote in is swapped for a link to a directory outside the
// workspace holding the same files (so nothing looks changed). Undo, even
// forced, must neither write the before-image there nor remove the file the
// turn created there.
func TestRestoreNeverFollowsALinkOutOfTheWorkspace(t *testing.T) {
	for _, force := range []bool{false, true} {
		f := newFixture(t)
		if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		f.write("sub/old.txt", "before\n")
		f.call("turn_1", "write_file", map[string]any{"path": "sub/old.txt", "content": "by the turn\n"})
		f.call("turn_1", "write_file", map[string]any{"path": "sub/new.txt", "content": "created\n"})

		outside := t.TempDir()
		for name, content := range map[string]string{"old.txt": "by the turn\n", "new.txt": "created\n"} {
			if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.RemoveAll(filepath.Join(f.dir, "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(f.dir, "sub")); err != nil {
			t.Fatal(err)
		}
		_, err := f.restore(undo.Options{Force: force})
		if err == nil {
			t.Errorf("force %v: undo through a link out of the workspace succeeded", force)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "old.txt")); string(b) != "by the turn\n" {
			t.Errorf("force %v: the file outside the workspace was written: %q", force, b)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); err != nil {
			t.Errorf("force %v: the file outside the workspace was removed: %v", force, err)
		}
	}
}

// TestARefusedWriteDoesNotBreakTheTurnsUndo: a model asks write_file for a
// file the workspace lets it read but never write (git's metadata). The
// write is refused, but its before-image was kept; undo then wrote the
// unchanged file back, was refused again, and failed the whole turn's undo
// every time ("some files could not be restored"), and rein.db kept a copy
// of the file (a remote's URL may hold a token). What no tool may write is
// not tracked, and a file that is as it was before the turn needs nothing
// written.
func TestARefusedWriteDoesNotBreakTheTurnsUndo(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(filepath.Join(f.dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.write(".git/config", "[remote \"origin\"]\n")
	f.write("a.txt", "before\n")
	raw := []byte(`{"path": ".git/config", "content": "[core]\n\thooksPath = /tmp/evil\n"}`)
	out, err := f.tools["write_file"].Run(context.Background(), tool.Call{ID: "c", Name: "write_file", Args: raw, ThreadID: f.thread, TurnID: "turn_1", Partial: &strings.Builder{}})
	if err == nil && !out.Failed {
		t.Fatalf("write_file of .git/config: %q, want refused", out.Text)
	}
	f.call("turn_1", "write_file", map[string]any{"path": "a.txt", "content": "by the turn\n"})
	entries, err := f.st.UndoEntries(context.Background(), f.thread, "turn_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Path == ".git/config" {
			t.Errorf("the journal keeps a copy of .git/config (%q), which no tool may write", e.Before)
		}
	}
	r, err := f.restore(undo.Options{})
	if err != nil {
		t.Fatalf("undo of a turn with a refused write: %v", err)
	}
	if got, _ := f.read("a.txt"); got != "before\n" {
		t.Errorf("a.txt = %q", got)
	}
	if got, _ := f.read(".git/config"); got != "[remote \"origin\"]\n" {
		t.Errorf(".git/config = %q", got)
	}
	if !slices.Equal(r.Restored, []string{"a.txt"}) {
		t.Errorf("restored %v, want a.txt alone", r.Restored)
	}
}
