package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunShowsTheSubagentsThreadToTrace: rein run's terminal output ends a
// sub-agent with its thread id, and rein trace opens that thread.
func TestRunShowsTheSubagentsThreadToTrace(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	script := writeScript(t, `rounds:
  - calls:
      - {name: task, args: {description: read the file, prompt: Read a.txt and say what it says.}}
  - calls:
      - {name: read_file, args: {path: a.txt}}
  - text: the file says alpha
  - text: done, it says alpha
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--db", db, "--model", "scripted:"+script, "--workspace", dir, "what does a.txt say")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	m := regexp.MustCompile(`sub-agent completed · .* · (thread_[a-z0-9]+)`).FindStringSubmatch(stdout + stderr)
	if m == nil {
		t.Fatalf("no sub-agent end line naming its thread:\n%s%s", stdout, stderr)
	}
	page := filepath.Join(dir, "child.html")
	if code, out, errOut := runMain(t, context.Background(), "trace", m[1], "--db", db, "--html", page); code != ExitCompleted {
		t.Errorf("rein trace %s: exit %d\n%s%s", m[1], code, out, errOut)
	}
	if b, _ := os.ReadFile(page); !strings.Contains(string(b), "the file says alpha") {
		t.Errorf("the trace of %s is not the sub-agent's turn", m[1])
	}
}
