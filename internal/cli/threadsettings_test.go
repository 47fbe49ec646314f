package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunThreadKeepsItsSettings: `rein run --thread` from another
// directory works in the thread's workspace (it worked in the current
// directory), keeps the thread's approval policy and sandbox mode, and
// refuses a flag that contradicts them, saying what the thread keeps.
func TestRunThreadKeepsItsSettings(t *testing.T) {
	clearKeys(t)
	db := filepath.Join(t.TempDir(), "rein.db")
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	first := writeScript(t, "rounds:\n  - text: hello\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--workspace", ws, "--sandbox", "read-only", "--approval", "untrusted", "--model", "scripted:"+first, "hi")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var out struct {
		ThreadID string `json:"thread_id"`
	}
	json.Unmarshal([]byte(lines[len(lines)-1]), &out)

	// From another directory, with no --workspace: a.txt is the thread's.
	t.Chdir(t.TempDir())
	second := writeScript(t, `rounds:
  - calls:
      - {id: c1, name: read_file, args: {path: a.txt}}
  - text: it says alpha
    expect:
      - result: {call: c1, status: ok, contains: alpha}
`)
	code, _, stderr = runMain(t, context.Background(), "run", "--json", "--db", db, "--model", "scripted:"+second, "--thread", out.ThreadID, "read a.txt")
	if code != ExitCompleted {
		t.Fatalf("run --thread from another directory: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "this turn runs on scripted:"+second) {
		t.Errorf("another --model is not said: %q", stderr)
	}
	// The thread's sandbox mode holds: read-only withholds write_file.
	third := writeScript(t, `rounds:
  - calls:
      - {id: w1, name: write_file, args: {path: b.txt, content: x}}
  - text: done
`)
	runMain(t, context.Background(), "run", "--json", "--db", db, "--model", "scripted:"+third, "--thread", out.ThreadID, "write b.txt")
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Error("a read-only thread's turn wrote b.txt: its sandbox mode was not kept")
	}

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"another workspace", []string{"--workspace", t.TempDir()}, "keeps workspace " + ws},
		{"another approval", []string{"--approval", "never"}, "keeps approval untrusted"},
		{"another sandbox", []string{"--sandbox", "full-access"}, "keeps sandbox read-only"},
		{"no such thread", []string{"--thread", "thread_nope"}, "no such thread"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--db", db, "--model", "scripted:" + first, "--thread", out.ThreadID}, tt.args...)
			code, _, stderr := runMain(t, context.Background(), append(args, "hi")...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// TestMaxCostWithoutAPriceIsRefused: a cost budget rein cannot keep (a
// scripted model has no price) is refused, not silently dropped.
func TestMaxCostWithoutAPriceIsRefused(t *testing.T) {
	clearKeys(t)
	script := writeScript(t, "rounds:\n  - text: hi\n")
	code, _, stderr := runMain(t, context.Background(), "run", "--db", filepath.Join(t.TempDir(), "rein.db"), "--workspace", t.TempDir(), "--max-cost", "0.01", "--model", "scripted:"+script, "hi")
	if code != ExitUsage || !strings.Contains(stderr, "--max-cost needs a price") {
		t.Errorf("exit %d, stderr %q; want 2 and what --max-cost needs", code, stderr)
	}
}

// TestChatThreadRefusesContradictingFlags: chat --thread refuses a flag
// that contradicts the thread, the model too (every chat turn runs on the
// thread's), before it asks for a terminal.
func TestChatThreadRefusesContradictingFlags(t *testing.T) {
	clearKeys(t)
	db := filepath.Join(t.TempDir(), "rein.db")
	ws := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: hello\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--workspace", ws, "--model", "scripted:"+script, "hi")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var out struct {
		ThreadID string `json:"thread_id"`
	}
	json.Unmarshal([]byte(lines[len(lines)-1]), &out)
	other := writeScript(t, "rounds:\n  - text: other\n")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"another workspace", []string{"--workspace", t.TempDir()}, "keeps workspace " + ws},
		{"another model", []string{"--model", "scripted:" + other}, "keeps model scripted:" + script},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, context.Background(), append([]string{"chat", "--db", db, "--thread", out.ThreadID}, tt.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// TestRunThreadKeepsItsToolChoices: the tools a thread's first run switched
// on (--tool) are the thread's, as chat's threads keep theirs: a later
// `rein run --thread` without --tool still has them.
func TestRunThreadKeepsItsToolChoices(t *testing.T) {
	clearKeys(t)
	db := filepath.Join(t.TempDir(), "rein.db")
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	first := writeScript(t, "rounds:\n  - text: hello\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--workspace", ws, "--capability", "none", "--tool", "read_file", "--model", "scripted:"+first, "hi")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	thread := outcomeOf(t, stdout)["thread_id"].(string)
	second := writeScript(t, `rounds:
  - calls:
      - {id: c1, name: read_file, args: {path: a.txt}}
  - text: it says alpha
    expect:
      - result: {call: c1, status: ok, contains: alpha}
`)
	code, stdout, stderr = runMain(t, context.Background(), "run", "--json", "--db", db, "--capability", "none", "--model", "scripted:"+second, "--thread", thread, "read a.txt")
	if code != ExitCompleted {
		t.Fatalf("run --thread without --tool: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
