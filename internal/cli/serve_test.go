package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/memory"
)

// rpcClient talks JSON-RPC to `rein serve --stdio` through pipes.
type rpcClient struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan map[string]any
	next  int
}

func (c *rpcClient) call(method string, params any) map[string]any {
	c.t.Helper()
	c.next++
	id := c.next
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	for {
		m := c.wait(func(m map[string]any) bool { return m["id"] != nil })
		if int(m["id"].(float64)) == id {
			if m["error"] != nil {
				c.t.Fatalf("%s: %v", method, m["error"])
			}
			return m["result"].(map[string]any)
		}
	}
}

// wait returns the next message that matches.
func (c *rpcClient) wait(match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatal("the server closed its output")
			}
			if match(m) {
				return m
			}
		case <-timeout:
			c.t.Fatal("no matching message within 20s")
		}
	}
}

func TestServeStdioRunsATurnWithTheStoreTools(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, `rounds:
  - calls:
      - {id: m1, name: write_memory, args: {op: add, text: "prefers metric units"}}
  - text: noted
    expect:
      - result: {call: m1, status: ok}
`)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		done <- mainIO(context.Background(), []string{"serve", "--stdio", "--model", "scripted:" + script, "--db", filepath.Join(dir, "rein.db"), "--workspace", dir}, inR, outW, &errb)
		outW.Close()
	}()
	c := &rpcClient{t: t, in: inW, lines: make(chan map[string]any, 256)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.lines <- m
			}
		}
	}()

	init := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	if info, _ := init["serverInfo"].(map[string]any); info["version"] != version() {
		t.Errorf("initialize: serverInfo %v, want version %q (as rein --version)", init["serverInfo"], version())
	}
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	turn := c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "remember: metric"}}})["turn"].(map[string]any)
	done1 := c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	got := done1["params"].(map[string]any)["turn"].(map[string]any)
	if got["id"] != turn["id"] || got["status"] != "completed" || got["answer"] != "noted" {
		t.Errorf("turn/completed %v", got)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
	// The thread is named by what the user first said, as run's are.
	st, err := openStore(context.Background(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored, err := st.Thread(context.Background(), th["id"].(string))
	if err != nil || stored.Title != "remember: metric" {
		t.Errorf("stored thread %+v, err %v; want the title %q", stored, err, "remember: metric")
	}
}

// TestServeReadsMemoryAgainForEachTurn: a memory written during a thread
// (by write_memory, or another process) is in the system prompt of the
// thread's next turn, and read_memory is mounted once the memory holds an
// entry.
func TestServeReadsMemoryAgainForEachTurn(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: hi\n")
	st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request"}, dir: dir, logw: io.Discard, st: st}
	defer b.close()
	th := session.Thread{ID: "thread_m"}
	o, _, err := b.setup(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Tools.Get(memory.ReadName); ok || strings.Contains(o.System, "prefers tabs") {
		t.Fatalf("before any memory: read_memory mounted %v, prompt %q", ok, o.System)
	}
	if _, _, err := st.AddMemory(t.Context(), store.UserScope, "The user prefers tabs."); err != nil {
		t.Fatal(err)
	}
	o, _, err = b.setup(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Tools.Get(memory.ReadName); !ok {
		t.Error("read_memory is not mounted after a memory was written")
	}
	if !strings.Contains(o.System, "prefers tabs") {
		t.Errorf("the next turn's prompt lacks the memory: %q", o.System)
	}
	if _, _, err := st.AddMemory(t.Context(), store.UserScope, "The user lives in Florence."); err != nil {
		t.Fatal(err)
	}
	o, _, err = b.setup(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o.System, "Florence") {
		t.Errorf("the prompt lacks the second memory: %q", o.System)
	}
}
