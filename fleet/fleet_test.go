package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// rein builds the rein command once per test binary.
func rein(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the rein command and runs a fleet of it")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rein-fleet-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "rein")
		if out, err := exec.Command("go", "build", "-o", binPath, "github.com/reinhq/rein/cmd/rein").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// node is one rein serve --stdio process of the fleet and a JSON-RPC
// client of it.
type node struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan map[string]any
	next  int
}

// start starts a node on the database at url, its live events relayed by
// the Redis at redis, whose model plays script; flags are more flags of
// rein serve.
func start(t testing.TB, name, url, redis, script string, flags ...string) *node {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--stdio", "--db", url, "--redis", redis, "--workspace", dir, "--model", "scripted:" + path}, flags...)
	cmd := exec.Command(rein(t), args...)
	cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "PATH=" + os.Getenv("PATH")}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, name: name, cmd: cmd, in: in, lines: make(chan map[string]any, 1024)}
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		if t.Failed() {
			t.Logf("node %s said:\n%s", name, stderr.String())
		}
	})
	go func() {
		defer close(n.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				n.lines <- m
			}
		}
	}()
	n.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "fleet-" + name}})
	return n
}

// request sends a call and returns its result or its error.
func (n *node) request(method string, params any) (result, rpcErr map[string]any) {
	n.t.Helper()
	n.next++
	id := n.next
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := n.in.Write(append(b, '\n')); err != nil {
		n.t.Fatalf("node %s: %v", n.name, err)
	}
	for {
		m := n.wait(func(m map[string]any) bool { return m["id"] != nil })
		if int(m["id"].(float64)) != id {
			continue
		}
		if e, ok := m["error"].(map[string]any); ok {
			return nil, e
		}
		return m["result"].(map[string]any), nil
	}
}

func (n *node) call(method string, params any) map[string]any {
	n.t.Helper()
	res, e := n.request(method, params)
	if e != nil {
		n.t.Fatalf("node %s: %s: %v", n.name, method, e)
	}
	return res
}

// wait returns the node's next message that matches.
func (n *node) wait(match func(map[string]any) bool) map[string]any {
	n.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-n.lines:
			if !ok {
				n.t.Fatalf("node %s closed its output", n.name)
			}
			if match(m) {
				return m
			}
		case <-timeout:
			n.t.Fatalf("node %s: no matching message within 60s", n.name)
		}
	}
}

// turn starts a turn of text on the thread and waits for its end.
func (n *node) turn(thread, text string) map[string]any {
	n.t.Helper()
	res := n.call("turn/start", map[string]any{"threadId": thread, "input": []map[string]any{{"type": "text", "text": text}}})
	id := res["turn"].(map[string]any)["id"]
	end := n.wait(func(m map[string]any) bool {
		if m["method"] != "turn/completed" {
			return false
		}
		return m["params"].(map[string]any)["turn"].(map[string]any)["id"] == id
	})
	return end["params"].(map[string]any)["turn"].(map[string]any)
}

// Three nodes on one database serve one thread in turn: a turn started on
// one, the next on another, each seen live by a client of another node; a
// node killed with SIGKILL in the middle of a
// turn frees the thread within its lease, and another node goes on with
// the turn it was running, which completes. No turn runs on two nodes at
// once: a turn another node starts while the killed node's lease lives is
// queued, and starts only once the turn before it has ended.
func TestFleetServesAThreadFromAnyNodeAndSurvivesAKill(t *testing.T) {
	url := servicetest.Postgres(t)
	redis, _ := servicetest.Redis(t)
	// Whichever of a and b takes the killed node's turn over answers it
	// with "later" (its model's next round), and so does the node that
	// runs the turn queued behind it.
	a := start(t, "a", url, redis, "rounds:\n  - text: first\n  - text: later\n  - text: later\n")
	b := start(t, "b", url, redis, "rounds:\n  - text: second\n  - text: later\n  - text: later\n")
	// c streams its answer slowly, so the kill lands mid-turn.
	c := start(t, "c", url, redis, "rounds:\n  - text: \""+strings.Repeat("slow ", 200)+"\"\n    chunk: 5\n    delay: 100ms\n")

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)
	// A client of node b watches the thread: it sees node a's turn end.
	b.call("thread/resume", map[string]any{"threadId": th})
	got := a.turn(th, "one")
	if got["status"] != "completed" || got["answer"] != "first" {
		t.Fatalf("node a's turn ended %v", got)
	}
	seen := b.wait(func(m map[string]any) bool {
		return m["method"] == "turn/completed" && m["params"].(map[string]any)["turn"].(map[string]any)["id"] == got["id"]
	})
	if ans := seen["params"].(map[string]any)["turn"].(map[string]any)["answer"]; ans != "first" {
		t.Errorf("node b's client saw node a's turn end with %v", ans)
	}
	if got := b.turn(th, "two"); got["status"] != "completed" || got["answer"] != "second" {
		t.Fatalf("node b's turn on the same thread ended %v", got)
	}

	three := c.call("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "three"}}})["turn"].(map[string]any)["id"]
	c.wait(func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["method"]), "delta") })
	// The turn runs on c: the thread is c's until its lease ends. A turn
	// a starts meanwhile is queued behind it (any node queues), and does
	// not start while c's lease lives.
	res, e := a.request("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "too early"}}})
	if e != nil || res["turn"].(map[string]any)["status"] != "queued" {
		t.Fatalf("a's turn/start while c runs one: %v %v, want it queued", res, e)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	id := res["turn"].(map[string]any)["id"]
	end := a.wait(func(m map[string]any) bool {
		return m["method"] == "turn/completed" && m["params"].(map[string]any)["turn"].(map[string]any)["id"] == id
	})
	took := time.Since(killed)
	t.Logf("the queued turn ran and ended %v after the kill (lease %v)", took.Round(10*time.Millisecond), pgstore.DefaultLease)
	if took < pgstore.DefaultLease/2 {
		t.Errorf("the queued turn ended %v after the kill, before c's lease could expire", took)
	}
	if got := end["params"].(map[string]any)["turn"].(map[string]any); got["status"] != "completed" || got["answer"] != "later" {
		t.Errorf("the turn after the kill ended %v", got)
	}

	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A client may see turn/completed a moment before the turn's end is
	// stored (docs/deploy.md): read the thread until no turn runs.
	var snap *session.Snapshot
	var statuses []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if snap, err = s.LoadThread(context.Background(), th); err != nil {
			t.Fatal(err)
		}
		statuses = statuses[:0]
		ended := true
		for _, tu := range snap.Turns {
			statuses = append(statuses, string(tu.Status))
			ended = ended && tu.Status != session.TurnInProgress && tu.Status != session.TurnQueued
		}
		if ended || time.Now().After(deadline) {
			break
		}
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("history: %v", err)
	}
	if strings.Join(statuses, " ") != "completed completed completed completed" {
		t.Errorf("turns %v, want every one completed: the killed node's turn went on on another node", statuses)
	}
	// The killed node's turn went on on a or b, whose model answered it.
	if tu := snap.Turns[2]; tu.ID != three || tu.Answer != "later" {
		t.Errorf("the killed node's turn reads %s %q, want %s answered on another node", tu.ID, tu.Answer, three)
	}
}

// waitTurnEnd waits for the end of turn id on the node's connection and
// returns the turn.
func (n *node) waitTurnEnd(id any) map[string]any {
	n.t.Helper()
	end := n.wait(func(m map[string]any) bool {
		return m["method"] == "turn/completed" && m["params"].(map[string]any)["turn"].(map[string]any)["id"] == id
	})
	return end["params"].(map[string]any)["turn"].(map[string]any)
}

func text(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

// Any node controls a turn that another runs: a turn started on node a is
// steered from node b (the model reads the steer), paused for an approval
// that node c answers (the turn goes on on node c), interrupted from node
// c while node a streams, and a turn started on node b while node a runs
// one is queued and run after it. Nothing acknowledged is lost: the
// steered item and the approval's result are in the stored history once.
func TestFleetControlsATurnFromAnyNode(t *testing.T) {
	url := servicetest.Postgres(t)
	redis, _ := servicetest.Redis(t)
	slow := func(n int) string { return strings.Repeat("slow ", n) }
	a := start(t, "a", url, redis, `rounds:
  - text: "`+slow(120)+`"
    chunk: 5
    delay: 30ms
  - text: heard metric
    expect: [{last_user: {contains: metric}}]
  - calls: [{id: w1, name: write_file, args: {path: a.txt, content: "hi\n"}}]
  - text: "`+slow(400)+`"
    chunk: 5
    delay: 30ms
  - text: queue ran
    expect: [{last_user: {contains: queued}}]
`, "--approval", "untrusted")
	b := start(t, "b", url, redis, "rounds: []\n", "--approval", "untrusted")
	c := start(t, "c", url, redis, `rounds:
  - text: written
    expect: [{result: {call: w1, tool: write_file, status: ok}}]
`, "--approval", "untrusted")

	th := a.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string)

	// Steered from b while a streams.
	res := a.call("turn/start", map[string]any{"threadId": th, "input": text("plan")})
	t1 := res["turn"].(map[string]any)["id"]
	a.wait(func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["method"]), "delta") })
	// Three steers, from b and c: each acknowledged one is in the history
	// once, in the order acknowledged.
	var steerIDs []any
	for i, n := range []*node{b, c, b} {
		st := n.call("turn/steer", map[string]any{"threadId": th, "expectedTurnId": t1, "input": text(fmt.Sprintf("use metric units (%d)", i))})
		steerIDs = append(steerIDs, st["itemId"])
	}
	if got := a.waitTurnEnd(t1); got["status"] != "completed" || got["answer"] != "heard metric" {
		t.Fatalf("node a's turn steered from node b ended %v", got)
	}

	// Paused on a for an approval, answered on c.
	res = a.call("turn/start", map[string]any{"threadId": th, "input": text("write it")})
	t2 := res["turn"].(map[string]any)["id"]
	a.wait(func(m map[string]any) bool { return m["method"] == "approval/requested" })
	// The pause ends the run on node a: its turn/completed says paused.
	if got := a.waitTurnEnd(t2); got["status"] != "paused" {
		t.Fatalf("node a's turn ended %v, want paused for the approval", got)
	}
	c.call("approval/answer", map[string]any{"threadId": th, "turnId": t2, "callId": "w1", "decision": "approve"})
	if got := c.waitTurnEnd(t2); got["status"] != "completed" || got["answer"] != "written" {
		t.Fatalf("the turn answered on node c ended %v", got)
	}

	// Streaming on a; b queues a turn; c interrupts a's.
	res = a.call("turn/start", map[string]any{"threadId": th, "input": text("talk")})
	t3 := res["turn"].(map[string]any)["id"]
	a.wait(func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["method"]), "delta") })
	q := b.call("turn/start", map[string]any{"threadId": th, "input": text("queued one")})["turn"].(map[string]any)
	if q["status"] != "queued" {
		t.Fatalf("node b's turn/start while node a runs the thread: %v, want queued", q)
	}
	asked := time.Now()
	c.call("turn/interrupt", map[string]any{"threadId": th, "turnId": t3})
	if got := a.waitTurnEnd(t3); got["status"] != "interrupted" {
		t.Fatalf("node a's turn interrupted from node c ended %v", got)
	}
	t.Logf("the interrupt from node c stopped node a's turn in %v", time.Since(asked).Round(time.Millisecond))
	if got := a.waitTurnEnd(q["id"]); got["status"] != "completed" || got["answer"] != "queue ran" {
		t.Fatalf("node b's queued turn ended %v on node a", got)
	}

	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.LoadThread(context.Background(), th)
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("history: %v", err)
	}
	var steers []any
	results := 0
	for _, it := range snap.Items {
		if it.Origin == llm.OriginSteer {
			steers = append(steers, it.ID)
		}
		if r := it.Result(); r != nil && r.CallID == "w1" && r.Status == llm.ResultOK {
			results++
		}
	}
	if fmt.Sprint(steers) != fmt.Sprint(steerIDs) || results != 1 {
		t.Errorf("the history holds the steers %v (acknowledged %v) and the approved call's result %d times, want each once", steers, steerIDs, results)
	}
	var statuses []string
	for _, tu := range snap.Turns {
		statuses = append(statuses, string(tu.Status))
	}
	if strings.Join(statuses, " ") != "completed completed interrupted completed" {
		t.Errorf("turns %v", statuses)
	}
}
