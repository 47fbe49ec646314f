package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
)

// A node killed while it runs a call the user approved (a command that
// changes the workspace): the node that takes the turn over does not run
// the command again, it answers the call "aborted: node lost" and the
// model decides; the command's side effect happens once.
func TestFleetAnApprovedCallCutByAKillRunsOnceAtMost(t *testing.T) {
	url := servicetest.Postgres(t)
	redis, _ := servicetest.Redis(t)
	ws := t.TempDir()
	a := start(t, "a", url, redis, `rounds:
  - calls: [{id: x1, name: exec, args: {command: "echo ran >> ran.txt; sleep 8", timeout: 20}}]
  - text: ran to the end
`, "--approval", "untrusted", "--workspace", ws)
	b := start(t, "b", url, redis, `rounds:
  - text: checked
    expect: [{result: {call: x1, tool: exec, status: aborted, contains: node lost}}]
`, "--approval", "untrusted", "--workspace", ws)

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	b.call("thread/resume", map[string]any{"threadId": th})
	id := a.call("turn/start", map[string]any{"threadId": th, "input": text("run it")})["turn"].(map[string]any)["id"]
	a.wait(func(m map[string]any) bool { return m["method"] == "approval/requested" })
	if got := a.waitTurnEnd(id); got["status"] != "paused" {
		t.Fatalf("the turn ended %v, want paused for the approval", got)
	}
	b.waitTurnEnd(id) // b's client saw the run end paused too
	a.call("approval/answer", map[string]any{"threadId": th, "turnId": id, "callId": "x1", "decision": "approve"})
	ran := filepath.Join(ws, "ran.txt")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ran); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the approved command never ran")
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	got := b.waitTurnEnd(id)
	if got["status"] != "completed" || got["answer"] != "checked" {
		t.Errorf("the turn taken over ended %v, want completed by the model reading the call aborted", got)
	}
	b2, err := os.ReadFile(ran)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b2), "ran\n"); n != 1 {
		t.Errorf("the approved command ran %d times, want once: a node taking the turn over ran it again", n)
	}
}
