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
	"github.com/reinhq/rein/session/pgstore"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// rein builds the rein command once per test binary.
func rein(t *testing.T) string {
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
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan map[string]any
	next  int
}

// start starts a node on the database at url, its live events relayed by
// the Redis at redis, whose model plays script.
func start(t *testing.T, name, url, redis, script string) *node {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rein(t), "serve", "--stdio", "--db", url, "--redis", redis, "--workspace", dir, "--model", "scripted:"+path)
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
// once: while the killed node's lease lives, the others are refused.
func TestFleetServesAThreadFromAnyNodeAndSurvivesAKill(t *testing.T) {
	url := servicetest.Postgres(t)
	redis, _ := servicetest.Redis(t)
	// Whichever of a and b takes the killed node's turn over answers it
	// with "later" (its model's next round), as a answers the turn after.
	a := start(t, "a", url, redis, "rounds:\n  - text: first\n  - text: later\n  - text: later\n")
	b := start(t, "b", url, redis, "rounds:\n  - text: second\n  - text: later\n")
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
	// The turn runs on c: the thread is c's until its lease ends.
	if _, e := a.request("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "too early"}}}); e == nil || e["code"].(float64) != -32016 {
		t.Fatalf("a started a turn while c runs one: %v", e)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var res map[string]any
	for {
		r, e := a.request("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "four"}}})
		if e == nil {
			res = r
			break
		}
		if e["code"].(float64) != -32016 {
			t.Fatalf("turn/start after the kill: %v", e)
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the killed node's thread is still busy %v after the kill", time.Since(killed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the thread was free again %v after the kill (lease %v)", time.Since(killed).Round(10*time.Millisecond), pgstore.DefaultLease)
	id := res["turn"].(map[string]any)["id"]
	end := a.wait(func(m map[string]any) bool {
		return m["method"] == "turn/completed" && m["params"].(map[string]any)["turn"].(map[string]any)["id"] == id
	})
	if got := end["params"].(map[string]any)["turn"].(map[string]any); got["status"] != "completed" || got["answer"] != "later" {
		t.Errorf("the turn after the kill ended %v", got)
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
	var statuses []string
	for _, tu := range snap.Turns {
		statuses = append(statuses, string(tu.Status))
	}
	if strings.Join(statuses, " ") != "completed completed completed completed" {
		t.Errorf("turns %v, want every one completed: the killed node's turn went on on another node", statuses)
	}
	// The killed node's turn went on on a or b, whose model answered it.
	if tu := snap.Turns[2]; tu.ID != three || tu.Answer != "later" {
		t.Errorf("the killed node's turn reads %s %q, want %s answered on another node", tu.ID, tu.Answer, three)
	}
}
