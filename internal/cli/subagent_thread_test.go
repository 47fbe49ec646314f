package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestASubagentsThreadIsTracedAndListedApart: rein run keeps a task call's
// child as a thread of its own: rein trace CHILD draws its turn, and rein
// sessions list shows only the thread the user started.
func TestASubagentsThreadIsTracedAndListedApart(t *testing.T) {
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
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--model", "scripted:"+script, "--workspace", dir, "what does a.txt say")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	var parent, child string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
			Sub      *struct {
				ThreadID string `json:"thread_id"`
			} `json:"sub"`
		}
		json.Unmarshal([]byte(line), &e)
		if e.Type == "subagent" && e.Sub != nil && child == "" {
			parent, child = e.ThreadID, e.Sub.ThreadID
		}
	}
	if child == "" {
		t.Fatalf("no subagent event in the output:\n%s", stdout)
	}
	page := filepath.Join(dir, "child.html")
	code, _, stderr = runMain(t, context.Background(), "trace", child, "--db", db, "--html", page)
	if code != ExitCompleted {
		t.Fatalf("trace of the child: exit %d\n%s", code, stderr)
	}
	b, _ := os.ReadFile(page)
	for _, want := range []string{"read_file", "the file says alpha"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the child's page lacks %q", want)
		}
	}
	code, stdout, stderr = runMain(t, context.Background(), "sessions", "list", "--all", "--db", db)
	if code != ExitCompleted {
		t.Fatalf("sessions list: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, parent) || strings.Contains(stdout, child) {
		t.Errorf("sessions list shows:\n%s\nwant the parent %s and not the child %s", stdout, parent, child)
	}
	_, stdout, _ = runMain(t, context.Background(), "sessions", "list", "--children", "--db", db)
	if !strings.Contains(stdout, child+" ") || !strings.Contains(stdout, "sub-agent of "+parent) {
		t.Errorf("sessions list --children shows:\n%s\nwant the child %s linked to %s", stdout, child, parent)
	}
	_, stdout, _ = runMain(t, context.Background(), "sessions", "show", parent, "--db", db)
	if !strings.Contains(stdout, "sub-agents") || !strings.Contains(stdout, child) {
		t.Errorf("sessions show of the parent:\n%s\nwant its sub-agent %s", stdout, child)
	}
	_, stdout, _ = runMain(t, context.Background(), "sessions", "show", child, "--db", db)
	if !strings.Contains(stdout, "sub-agent of thread "+parent) || !strings.Contains(stdout, "the file says alpha") {
		t.Errorf("sessions show of the child:\n%s\nwant its items and its parent %s", stdout, parent)
	}
}
