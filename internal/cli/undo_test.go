package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUndoRevertsARunAndNeverOverwritesTheUsersChange(t *testing.T) {
	clearKeys(t)
	ctx := context.Background()
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "rein.db")
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644)
	script := writeScript(t, `rounds:
  - calls:
      - {name: edit_file, args: {path: main.go, old_string: "package main", new_string: "package changed"}}
      - {name: write_file, args: {path: NOTES.md, content: "notes\n"}}
  - text: done
`)
	code, stdout, stderr := runMain(t, ctx, "run", "--json", "--db", db, "-C", ws, "-m", "scripted:"+script, "change things")
	if code != 0 {
		t.Fatalf("run: exit %d %s", code, stderr)
	}
	thread := outcomeOf(t, stdout)["thread_id"].(string)

	// The user changes a file the turn wrote: undo refuses, restoring nothing.
	os.WriteFile(filepath.Join(ws, "NOTES.md"), []byte("my own notes\n"), 0o644)
	code, _, stderr = runMain(t, ctx, "undo", "--db", db, thread)
	if code != ExitFailed || !strings.Contains(stderr, "NOTES.md (changed after the turn)") || !strings.Contains(stderr, "--force") {
		t.Fatalf("undo over the user's change: exit %d %q; want 1 naming NOTES.md", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "NOTES.md")); string(b) != "my own notes\n" {
		t.Fatalf("NOTES.md = %q: the user's change was overwritten", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); string(b) != "package changed\n" {
		t.Fatalf("main.go = %q: a refused undo restored part of the turn", b)
	}

	// The user puts the turn's content back: undo goes through, by prefix.
	os.WriteFile(filepath.Join(ws, "NOTES.md"), []byte("notes\n"), 0o644)
	code, out, stderr := runMain(t, ctx, "undo", "--db", db, strings.TrimPrefix(thread, "thread_")[:8])
	if code != 0 || !strings.Contains(out, "1 file(s) restored, 1 removed") {
		t.Fatalf("undo: exit %d %q %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); string(b) != "package main\n" {
		t.Errorf("main.go = %q after undo", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.md")); !os.IsNotExist(err) {
		t.Errorf("NOTES.md is still there after undo: %v", err)
	}
	if code, _, stderr := runMain(t, ctx, "undo", "--db", db, thread); code != ExitFailed || !strings.Contains(stderr, "nothing to undo") {
		t.Errorf("second undo: exit %d %q; want nothing to undo", code, stderr)
	}
}

// A turn that wrote files, paused for the user (ask_user), and was
// answered by another process, where it wrote more, is one turn to undo:
// the writes from before the pause and from after the answer are all
// reverted.
func TestUndoRevertsBothSidesOfAPausedThenAnsweredTurn(t *testing.T) {
	clearKeys(t)
	ctx := context.Background()
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "rein.db")
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "config.txt"), []byte("port = 80\n"), 0o644)
	ask := writeScript(t, `rounds:
  - calls:
      - {name: edit_file, args: {path: main.go, old_string: "package main", new_string: "package before"}}
      - {name: write_file, args: {path: BEFORE.md, content: "before the pause\n"}}
  - calls:
      - {id: ask1, name: ask_user, args: {questions: [{prompt: "Which port?"}]}}
`)
	answer := writeScript(t, `rounds:
  - calls:
      - {name: write_file, args: {path: config.txt, content: "port = 8080\n"}}
      - {name: write_file, args: {path: AFTER.md, content: "after the answer\n"}}
    expect:
      - result: {call: ask1, contains: "8080"}
  - text: done
`)
	code, stdout, stderr := runMain(t, ctx, "run", "--json", "--db", db, "-C", ws, "-m", "scripted:"+ask, "set things up")
	if code != ExitPaused {
		t.Fatalf("run: exit %d, want paused\n%s\n%s", code, stdout, stderr)
	}
	thread := outcomeOf(t, stdout)["thread_id"].(string)
	code, stdout, stderr = runMain(t, ctx, "answer", "--json", "--db", db, "--model", "scripted:"+answer, thread, "8080")
	if code != ExitCompleted {
		t.Fatalf("answer: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "config.txt")); string(b) != "port = 8080\n" {
		t.Fatalf("config.txt = %q after the answer", b)
	}

	code, out, stderr := runMain(t, ctx, "undo", "--db", db, thread)
	if code != 0 || !strings.Contains(out, "2 file(s) restored, 2 removed") {
		t.Fatalf("undo: exit %d %q %q; want both sides of the pause reverted", code, out, stderr)
	}
	for name, want := range map[string]string{"main.go": "package main\n", "config.txt": "port = 80\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, name)); string(b) != want {
			t.Errorf("%s = %q after undo, want %q", name, b, want)
		}
	}
	for _, name := range []string{"BEFORE.md", "AFTER.md"} {
		if _, err := os.Stat(filepath.Join(ws, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after undo: %v", name, err)
		}
	}
}
