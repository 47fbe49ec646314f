package cli

import (
	"path/filepath"
	"testing"
	"time"
)

// TestServeRunsAScheduledMessageOnTime: a job the cron tool schedules
// under rein serve starts its turn within a second of its time — the tool
// wakes the server's scheduler, which does not wait for its next poll.
func TestServeRunsAScheduledMessageOnTime(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	// The job is due once the first turn has surely ended, even on a loaded
	// machine under -race: a job that comes due while the thread's turn
	// runs joins that turn instead of starting its own (seen at load 20
	// with 1.5–2.5 s).
	due := time.Now().Add(6 * time.Second).Truncate(time.Second)
	script := writeScript(t, `rounds:
  - calls:
      - {id: c1, name: cron, args: {action: schedule, name: ping, message: "say pong", at: "`+due.Format(time.RFC3339Nano)+`"}}
  - text: scheduled
    expect:
      - result: {call: c1, status: ok}
  - text: pong
`)
	c, in, done := startServeStdio(t, "--model", "scripted:"+script, "--db", filepath.Join(dir, "rein.db"), "--workspace", dir)
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "ping me"}}})
	answer := func(m map[string]any) string {
		turn, _ := m["params"].(map[string]any)["turn"].(map[string]any)
		s, _ := turn["answer"].(string)
		return s
	}
	if got := answer(c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })); got != "scheduled" {
		t.Fatalf("first turn answered %q", got)
	}
	fired := c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	at := time.Now()
	if got := answer(fired); got != "pong" {
		t.Fatalf("the scheduled turn answered %q", got)
	}
	if late := at.Sub(due); late > time.Second {
		t.Errorf("the scheduled turn ended %s after its time, want within 1s", late)
	}
	if at.Before(due) {
		t.Errorf("the scheduled turn ran %s early", due.Sub(at))
	}
	in.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
}
