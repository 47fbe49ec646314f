package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/store"
)

// TestMain keeps every test of the package off the user's own store, and
// lets a test run the command in a new process: the test binary re-executed
// with REIN_TEST_MAIN=1 is rein.
func TestMain(m *testing.M) {
	if os.Getenv("REIN_TEST_MAIN") == "1" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv("REIN_TEST_MCP") == "1" {
		// The test binary as an MCP server (mcp_test.go).
		os.Exit(runTestMCPServer())
	}
	dir, err := os.MkdirTemp("", "rein-cli-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv(store.EnvPath, filepath.Join(dir, "rein.db"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rein runs the command in a new process and returns its exit code and
// output.
func rein(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// outcomeOf returns the --json outcome line.
func outcomeOf(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var o map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &o); err != nil || o["type"] != "outcome" {
		t.Fatalf("last line is not the outcome: %q (%v)", lines[len(lines)-1], err)
	}
	return o
}

func showThread(t *testing.T, db, id string) store.Snapshot {
	t.Helper()
	code, out, stderr := runMain(t, context.Background(), "sessions", "show", "--json", "--db", db, id)
	if code != 0 {
		t.Fatalf("sessions show: exit %d: %s", code, stderr)
	}
	var snap store.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatal(err)
	}
	return snap
}

// A turn paused by ask_user in one process is answered by another, started
// after the first has exited, and completes with the answer.
func TestPausedTurnIsAnsweredByAnotherProcess(t *testing.T) {
	clearKeys(t)
	db := filepath.Join(t.TempDir(), "rein.db")
	ws := t.TempDir()
	ask := writeScript(t, `
rounds:
  - text: I need to know one thing.
    calls:
      - id: ask1
        name: ask_user
        args: {questions: [{prompt: "Which color should the button be?"}]}
`)
	answer := writeScript(t, `
rounds:
  - text: The button is now blue.
    expect:
      - result: {call: ask1, contains: blue}
`)
	code, stdout, stderr := rein(t, "run", "--json", "--db", db, "--workspace", ws, "--model", "scripted:"+ask, "paint the button")
	if code != ExitPaused {
		t.Fatalf("run: exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	o := outcomeOf(t, stdout)
	thread, _ := o["thread_id"].(string)
	if o["status"] != "paused" || thread == "" {
		t.Fatalf("run outcome %v", o)
	}

	// A wrong answer shape is refused and leaves the turn waiting.
	if code, _, stderr := rein(t, "answer", "--db", db, "--approve", thread); code != ExitUsage || !strings.Contains(stderr, "questions") {
		t.Fatalf("approving a question: exit %d %q, want 2", code, stderr)
	}

	code, stdout, stderr = rein(t, "answer", "--json", "--db", db, "--model", "scripted:"+answer, thread, "blue")
	if code != ExitCompleted {
		t.Fatalf("answer: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	o = outcomeOf(t, stdout)
	if o["status"] != "completed" || o["answer"] != "The button is now blue." || o["thread_id"] != thread {
		t.Fatalf("answer outcome %v", o)
	}

	snap := showThread(t, db, thread)
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 1 || snap.Turns[0].Status != loop.StatusCompleted || snap.Turns[0].Answer != "The button is now blue." {
		t.Fatalf("turns after the answer: %+v", snap.Turns)
	}
	if res := snap.Items[2].Result(); res == nil || res.CallID != "ask1" || !strings.Contains(res.Content, "blue") {
		t.Fatalf("the placeholder was not replaced by the answer: %+v", snap.Items[2])
	}
	if code, _, stderr := rein(t, "answer", "--db", db, thread, "again"); code != ExitUsage || !strings.Contains(stderr, "no paused turn") {
		t.Fatalf("answering twice: exit %d %q, want 2", code, stderr)
	}
}

func TestRunContinuesAThreadAndSessionsListShowRemove(t *testing.T) {
	clearKeys(t)
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "rein.db")
	ws := t.TempDir()
	first := writeScript(t, "rounds:\n  - text: Hello, Ada.\n")
	code, _, stderr := runMain(t, ctx, "run", "--db", db, "--workspace", ws, "--model", "scripted:"+first, "my name is Ada")
	if code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	// Human mode names the thread on stderr.
	thread := ""
	for f := range strings.FieldsSeq(stderr) {
		if strings.HasPrefix(f, "thread_") {
			thread = strings.TrimRight(f, ";")
			break
		}
	}
	if thread == "" {
		t.Fatalf("no thread id on stderr: %q", stderr)
	}
	second := writeScript(t, `
rounds:
  - text: Your name is Ada.
    expect:
      - last_user: what is my name
`)
	code, stdout, stderr := runMain(t, ctx, "run", "--json", "--db", db, "--workspace", ws, "--model", "scripted:"+second, "--thread", thread, "what is my name?")
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if o := outcomeOf(t, stdout); o["thread_id"] != thread {
		t.Fatalf("second run on thread %v, want %s", o["thread_id"], thread)
	}
	snap := showThread(t, db, thread)
	if len(snap.Turns) != 2 || len(snap.Items) != 4 || snap.Items[0].Text() != "my name is Ada" {
		t.Fatalf("thread after two turns: %d turns, items %+v", len(snap.Turns), snap.Items)
	}

	code, out, _ := runMain(t, ctx, "sessions", "list", "--db", db, "-C", ws)
	if code != 0 || !strings.Contains(out, thread) || !strings.Contains(out, "my name is Ada") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	code, out, _ = runMain(t, ctx, "sessions", "show", "--db", db, thread)
	if code != 0 || !strings.Contains(out, "> what is my name?") || !strings.Contains(out, "Your name is Ada.") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	if code, _, stderr := runMain(t, ctx, "run", "--db", db, "--workspace", ws, "--model", "scripted:"+first, "--thread", "thread_nope", "hi"); code != ExitUsage || !strings.Contains(stderr, "no such thread") {
		t.Fatalf("--thread of a missing thread: exit %d %q", code, stderr)
	}
	if code, _, _ := runMain(t, ctx, "sessions", "rm", "--db", db, thread); code != 0 {
		t.Fatalf("rm: exit %d", code)
	}
	if code, _, _ := runMain(t, ctx, "sessions", "show", "--db", db, thread); code != ExitFailed {
		t.Fatalf("show after rm: exit %d, want 1", code)
	}
}
