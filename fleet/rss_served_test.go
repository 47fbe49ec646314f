package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reinhq/rein/internal/servicetest"
)

// BenchmarkNodeRSSServed measures whether a node's memory grows with the
// threads it has served: one rein serve --listen node, clients that each
// connect, start a thread, run one turn (an answer of about 4 KB) and
// leave, one after another, in two rounds of REIN_RSS_SERVED threads
// (default 1000). It reports the resident set after each round, the
// threads held then, with the node's default bound on idle threads
// (--keep-threads 1000, --idle-threads 5m) cut to keep=100, and without one
// (keep=0: --keep-threads 0 --idle-threads 0, the node before the bound).
func BenchmarkNodeRSSServed(b *testing.B) {
	served := 1000
	if v, err := strconv.Atoi(os.Getenv("REIN_RSS_SERVED")); err == nil && v > 0 {
		served = v
	}
	for _, keep := range []int{0, 100} {
		b.Run(fmt.Sprintf("keep=%d", keep), func(b *testing.B) {
			for range b.N {
				url := servicetest.Postgres(b)
				redis, _ := servicetest.Redis(b)
				flags := []string{"--keep-threads", strconv.Itoa(keep), "--idle-threads", "0"}
				addr, pid := listenNode(b, url, redis, `rounds:
  - text: "`+strings.Repeat("an answer of some length ", 160)+`"
    repeat: 1000000
`, flags...)
				for round := 1; round <= 2; round++ {
					start := time.Now()
					for range served {
						serveOne(b, addr)
					}
					// Past the 10 s the count bound leaves a thread
					// before it drops it, and a sweep.
					time.Sleep(17 * time.Second)
					rss, _ := rssKB(b, pid)
					b.Logf("keep=%d: after %d threads served (%v): RSS %.1f MB", keep, round*served, time.Since(start).Round(time.Second), float64(rss)/1024)
					b.ReportMetric(float64(rss)/1024, fmt.Sprintf("rss%d-MB", round))
				}
			}
		})
	}
}

// listenNode starts rein serve --listen on a free loopback port and
// returns its address and process id.
func listenNode(b *testing.B, url, redis, script string, flags ...string) (string, int) {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	args := append([]string{"serve", "--listen", addr, "--db", url, "--redis", redis, "--workspace", dir, "--model", "scripted:" + path}, flags...)
	cmd := exec.Command(rein(b), args...)
	cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if b.Failed() {
			b.Logf("node said:\n%s", stderr.String())
		}
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			b.Fatalf("the node did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr, cmd.Process.Pid
}

// serveOne is one client: it connects, starts a thread, runs a turn to
// its end and leaves.
func serveOne(b *testing.B, addr string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	id := 0
	send := func(method string, params any) int {
		id++
		m, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err := c.Write(ctx, websocket.MessageText, m); err != nil {
			b.Fatal(err)
		}
		return id
	}
	read := func(until func(map[string]any) bool) map[string]any {
		for {
			_, raw, err := c.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
			if e, ok := m["error"]; ok {
				b.Fatalf("node: %v", e)
			}
			if until(m) {
				return m
			}
		}
	}
	reply := func(want int) map[string]any {
		return read(func(m map[string]any) bool { v, ok := m["id"].(float64); return ok && int(v) == want })
	}
	reply(send("initialize", map[string]any{"clientInfo": map[string]any{"name": "rss"}}))
	th := reply(send("thread/start", map[string]any{}))["result"].(map[string]any)["thread"].(map[string]any)["id"]
	send("turn/start", map[string]any{"threadId": th, "input": text("go")})
	read(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	c.Close(websocket.StatusNormalClosure, "")
}
