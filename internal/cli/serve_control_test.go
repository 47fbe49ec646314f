package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
)

// A cron job scheduled on a thread kept in PostgreSQL is stored in the
// node's file (which does not hold the thread) and runs at its time; it
// failed on the file's foreign key to its threads table.
func TestServeSchedulesAJobOnAPostgresThread(t *testing.T) {
	clearKeys(t)
	url := servicetest.Postgres(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // the tools' data
	due := time.Now().Add(2500 * time.Millisecond).Truncate(time.Second)
	script := writeScript(t, `rounds:
  - calls:
      - {id: c1, name: cron, args: {action: schedule, name: ping, message: "say pong", at: "`+due.Format(time.RFC3339Nano)+`"}}
  - text: scheduled
    expect:
      - result: {call: c1, status: ok}
  - text: pong
`)
	var errb strings.Builder
	c, in, done := startServeStdioErr(t, &errb, "--model", "scripted:"+script, "--db", url, "--workspace", dir)
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "ping me"}}})
	answer := func(m map[string]any) string {
		turn, _ := m["params"].(map[string]any)["turn"].(map[string]any)
		s, _ := turn["answer"].(string)
		return s
	}
	if got := answer(c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })); got != "scheduled" {
		t.Fatalf("first turn answered %q, want the job scheduled", got)
	}
	if got := answer(c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })); got != "pong" {
		t.Fatalf("the scheduled turn answered %q", got)
	}
	in.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
}
