package fleet

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
)

// A job scheduled with the cron tool on node a that falls due while node a
// drains (SIGTERM) is not refused nor lost there: the jobs are the fleet's
// (in PostgreSQL), the draining node claims no more runs, and node b runs
// the job's turn.
func TestFleetAJobDueWhileANodeDrainsRunsOnAnotherNode(t *testing.T) {
	url := servicetest.Postgres(t)
	redis, _ := servicetest.Redis(t)
	// Node b first: the rein command is built before the job's time is
	// set.
	b := start(t, "b", url, redis, `rounds:
  - text: job ran
    expect: [{last_user: {contains: water the plants}}]
`)
	due := time.Now().Add(20 * time.Second).Truncate(time.Second)
	a := start(t, "a", url, redis, fmt.Sprintf(`rounds:
  - calls: [{id: c1, name: cron, args: {action: schedule, message: water the plants, at: "%s"}}]
  - text: scheduled
    expect: [{result: {call: c1, status: ok}}]
  - text: "%s"
    chunk: 5
    delay: 100ms
`, due.UTC().Format(time.RFC3339), strings.Repeat("slow ", 400)), "--drain-timeout", "30s")

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	if got := a.turn(th, "water the plants at the time"); got["status"] != "completed" || got["answer"] != "scheduled" {
		t.Fatalf("the scheduling turn ended %v; the thread: %v", got["status"], a.call("thread/read", map[string]any{"threadId": th}))
	}
	b.call("thread/resume", map[string]any{"threadId": th})
	// A long turn on another thread keeps node a draining past the job's
	// time.
	other := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	a.call("turn/start", map[string]any{"threadId": other, "input": text("talk")})
	a.wait(func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["method"]), "delta") })
	time.Sleep(time.Until(due.Add(-3 * time.Second)))
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGTERM %v before the job's time", time.Until(due).Round(time.Millisecond))
	end := b.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	got := end["params"].(map[string]any)["turn"].(map[string]any)
	if got["status"] != "completed" || got["answer"] != "job ran" {
		t.Logf("the job's thread: %v", b.call("thread/read", map[string]any{"threadId": th}))
		t.Errorf("the job's turn ended %v, want completed on node b", got)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Errorf("the drained node exited with %v, want 0", err)
	}
}
