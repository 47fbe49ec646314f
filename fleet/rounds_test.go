package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
)

// cpuTicks reads a process's user and system CPU time, in clock ticks.
func cpuTicks(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime and
	// stime are the 14th and 15th of the line.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// ticksPerSecond is the kernel's USER_HZ on Linux.
const ticksPerSecond = 100

// send writes a request without waiting for its answer.
func (n *node) send(method string, params any) {
	n.t.Helper()
	n.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n.next, "method": method, "params": params})
	if _, err := n.in.Write(append(b, '\n')); err != nil {
		n.t.Fatalf("node %s: %v", n.name, err)
	}
}

// BenchmarkFleetRounds measures rounds per second of 1, 2 and 3 rein serve
// nodes on one PostgreSQL and Redis, each node's clients keeping 16
// threads busy with one-round turns against the scripted model (the mock
// provider, in the node's process) for 10 s, and each node's CPU time per
// round. On this 2-core machine the nodes share the cores with PostgreSQL,
// Redis and the benchmark itself.
func BenchmarkFleetRounds(b *testing.B) {
	const perNode = 16
	const span = 10 * time.Second
	for _, nodes := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for range b.N {
				url := servicetest.Postgres(b)
				redis, _ := servicetest.Redis(b)
				var fleet []*node
				for i := range nodes {
					fleet = append(fleet, start(b, fmt.Sprintf("n%d", i), url, redis, "rounds:\n  - text: ok\n    repeat: 10000000\n"))
				}
				threads := make([][]string, nodes)
				for i, n := range fleet {
					for range perNode {
						threads[i] = append(threads[i], n.call("thread/start", map[string]any{})["thread"].(map[string]any)["id"].(string))
					}
				}
				before := make([]int64, nodes)
				for i, n := range fleet {
					before[i] = cpuTicks(b, n.cmd.Process.Pid)
				}
				began := time.Now()
				stop := began.Add(span)
				done := make(chan int, nodes)
				for i, n := range fleet {
					go func() {
						rounds, busy := 0, 0
						for _, th := range threads[i] {
							n.send("turn/start", map[string]any{"threadId": th, "input": text("go")})
							busy++
						}
						for busy > 0 {
							m, ok := <-n.lines
							if !ok {
								break
							}
							if m["method"] != "turn/completed" {
								continue
							}
							busy--
							tu := m["params"].(map[string]any)["turn"].(map[string]any)
							if tu["status"] == "completed" {
								rounds++
							}
							if time.Now().Before(stop) {
								n.send("turn/start", map[string]any{"threadId": tu["threadId"], "input": text("go")})
								busy++
							}
						}
						done <- rounds
					}()
				}
				total := 0
				for range nodes {
					total += <-done
				}
				took := time.Since(began)
				var cpu float64
				for i, n := range fleet {
					cpu += float64(cpuTicks(b, n.cmd.Process.Pid)-before[i]) / ticksPerSecond
				}
				b.ReportMetric(float64(total)/took.Seconds(), "rounds/s")
				b.ReportMetric(cpu/float64(total)*1000, "cpu-ms/round")
				b.ReportMetric(cpu/took.Seconds()/float64(nodes), "cores/node")
			}
		})
	}
}
