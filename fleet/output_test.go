package fleet

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/servicetest"
)

// A turn asking for a structured answer, started on node b while node a
// runs the thread, is queued with its schema in the store: node a, which
// starts it when its own turn ends, asks for the same answer (the turn's
// output is the JSON object), rather than running it as text.
func TestFleetAQueuedTurnKeepsItsOutputSchemaOnTheNodeThatRunsIt(t *testing.T) {
	url := servicetest.Postgres(t)
	redis, _ := servicetest.Redis(t)
	a := start(t, "a", url, redis, `rounds:
  - text: "`+strings.Repeat("slow ", 100)+`"
    chunk: 5
    delay: 20ms
  - text: '{"city":"Paris"}'
`)
	b := start(t, "b", url, redis, "rounds:\n  - text: never\n")

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	b.call("thread/resume", map[string]any{"threadId": th})
	first := a.call("turn/start", map[string]any{"threadId": th, "input": text("one")})["turn"].(map[string]any)["id"]
	a.wait(func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["method"]), "delta") })
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	q := b.call("turn/start", map[string]any{"threadId": th, "input": text("where to?"), "output": schema})["turn"].(map[string]any)
	if q["status"] != "queued" {
		t.Fatalf("node b's turn/start while node a runs the thread: %v, want queued", q)
	}
	if got := a.waitTurnEnd(first); got["status"] != "completed" {
		t.Fatalf("node a's turn ended %v", got)
	}
	got := a.waitTurnEnd(q["id"])
	out, _ := json.Marshal(got["output"])
	if got["status"] != "completed" || string(out) != `{"city":"Paris"}` {
		t.Errorf("the queued structured turn ended %v with output %s, want completed with {\"city\":\"Paris\"} as its structured answer", got, out)
	}
}
