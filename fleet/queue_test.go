package fleet

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// A node drained (SIGTERM) while the last round of its turn streams ends
// that turn there and starts nothing more: the turn queued behind it is
// taken by another node as soon as the turn ends (the drained node left),
// not a lease after the thread's last write. Every round of both jobs is
// asked for once.
func TestFleetADrainedNodesQueuedTurnStartsElsewhereAtOnce(t *testing.T) {
	e := newFleetEnv(t, 50*time.Millisecond, 12)
	a, _ := e.spawn("a")
	b, _ := e.spawn("b")

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	b.call("thread/resume", map[string]any{"threadId": th})
	first := startJob(a, th, "job-q1")
	res := a.call("turn/start", map[string]any{"threadId": th, "input": text("job-q2")})["turn"].(map[string]any)
	if res["status"] != "queued" {
		t.Fatalf("the second turn is %v, want queued behind the first", res["status"])
	}
	e.waitRequested("job-q1", jobRounds-1) // the last round streams
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := ended(b, first); got["status"] != "completed" {
		t.Fatalf("the drained node's last turn ended %v, want completed", got)
	}
	if got := ended(b, res["id"].(string)); got["status"] != "completed" || !strings.Contains(got["answer"].(string), "done job-q2") {
		t.Fatalf("the queued turn ended %v, want completed on another node", got)
	}
	gap := e.provider.askedAt("job-q2", 0).Sub(e.provider.answeredAt("job-q1", jobRounds-1))
	t.Logf("from the drained node's last turn's end to the queued turn's first request on another node: %v", gap.Round(time.Millisecond))
	// Left to the lease, it would wait at least 5 s from the thread's
	// last write.
	if gap > 3*time.Second {
		t.Errorf("the queued turn started %v after the turn before it ended: it waited for a lease, not for a free node", gap)
	}
	for _, job := range []string{"job-q1", "job-q2"} {
		for r := range jobRounds {
			if req, done := e.provider.counts(job, r); req != 1 || done != 1 {
				t.Errorf("%s round %d: asked %d times, answered %d times; want once each", job, r, req, done)
			}
		}
	}
}
