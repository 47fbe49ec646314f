package fleet

import (
	"syscall"
	"testing"
	"time"
)

// An interrupt asked from another node while the node running the turn is
// frozen (SIGSTOP: it never reads the mark) holds for the node that takes
// the turn over once the frozen node's lease ends: the turn ends
// interrupted there instead of going on to its end.
func TestFleetAnInterruptHoldsAcrossATakeover(t *testing.T) {
	e := newFleetEnv(t, 50*time.Millisecond, 12)
	a, _ := e.spawn("a")
	b, _ := e.spawn("b")

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	b.call("thread/resume", map[string]any{"threadId": th})
	id := startJob(a, th, "job-i")
	e.waitRequested("job-i", 1)
	time.Sleep(150 * time.Millisecond)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer a.cmd.Process.Signal(syscall.SIGCONT)
	b.call("turn/interrupt", map[string]any{"threadId": th, "turnId": id})
	got := ended(b, id)
	if got["status"] != "interrupted" {
		t.Fatalf("the turn interrupted before its takeover ended %v, want interrupted", got)
	}
}
