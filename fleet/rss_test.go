package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session/pgstore"
)

// storeThreads puts n ended threads (a turn of two items each) in the
// database at url, as a fleet that served them leaves them.
func storeThreads(b *testing.B, url string, n int) {
	b.Helper()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgstore.Config{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	user, _ := json.Marshal(llm.UserText("a question asked long ago").Parts)
	answer, _ := json.Marshal(llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "its answer, about as long as a short answer is"}}}.Parts)
	now := time.Now().UnixNano()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO threads (id, created, updated, title, settings, nitems, nturns)
		 SELECT 'thread_s' || g, $2::bigint + g, $2::bigint + g, 'stored ' || g, '{}', 2, 1 FROM generate_series(1, $1::int) g`, []any{n, now}},
		{`INSERT INTO turns (id, thread, seq, status, started, ended, answer)
		 SELECT 'turn_s' || g, 'thread_s' || g, 1, 'completed', $2::bigint, $2::bigint, 'its answer' FROM generate_series(1, $1::int) g`, []any{n, now}},
		{`INSERT INTO items (thread, seq, id, turn, role, parts, created)
		 SELECT 'thread_s' || g, 1, 'turn_s' || g || '.1', 'turn_s' || g, 'user', $3, $2::bigint FROM generate_series(1, $1::int) g`, []any{n, now, string(user)}},
		{`INSERT INTO items (thread, seq, id, turn, role, parts, created)
		 SELECT 'thread_s' || g, 2, 'turn_s' || g || '.2', 'turn_s' || g, 'assistant', $3, $2::bigint FROM generate_series(1, $1::int) g`, []any{n, now, string(answer)}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			b.Fatal(err)
		}
	}
}

// rssKB reads a process's resident set (VmRSS) and its peak (VmHWM).
func rssKB(b *testing.B, pid int) (rss, peak int) {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			peak = v
		}
	}
	return rss, peak
}

// BenchmarkNodeRSS measures a rein serve node's memory with many threads
// stored and 100 active: 100 threads, each running a turn that streams at
// once, and a page of the thread list read. It reports the resident set
// while they run and its peak, for 1,000 and 100,000 stored threads: a
// node's memory should not grow with what the database holds.
func BenchmarkNodeRSS(b *testing.B) {
	for _, stored := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			for range b.N {
				url := servicetest.Postgres(b)
				redis, _ := servicetest.Redis(b)
				storeThreads(b, url, stored)
				n := start(b, "a", url, redis, `rounds:
  - text: "`+strings.Repeat("streamed ", 40)+`"
    chunk: 9
    delay: 50ms
    repeat: 1000
`)
				n.call("thread/list", map[string]any{})
				var threads []any
				for range 100 {
					threads = append(threads, n.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"])
				}
				for _, th := range threads {
					n.send("turn/start", map[string]any{"threadId": th, "input": text("go")})
				}
				running := 0
				left := len(threads)
				tick := time.NewTicker(100 * time.Millisecond)
				for left > 0 {
					select {
					case m, ok := <-n.lines:
						if !ok {
							b.Fatal("the node closed its output")
						}
						if e, ok := m["error"]; ok {
							b.Fatalf("node: %v", e)
						}
						if m["method"] != "turn/completed" {
							continue
						}
						if got := m["params"].(map[string]any)["turn"].(map[string]any); got["status"] != "completed" {
							b.Fatalf("a turn ended %v", got)
						}
						left--
					case <-tick.C:
						rss, _ := rssKB(b, n.cmd.Process.Pid)
						running = max(running, rss)
					case <-time.After(2 * time.Minute):
						b.Fatalf("%d turns did not end", left)
					}
				}
				tick.Stop()
				_, peak := rssKB(b, n.cmd.Process.Pid)
				b.ReportMetric(float64(running)/1024, "rss-MB")
				b.ReportMetric(float64(peak)/1024, "peak-MB")
			}
		})
	}
}
