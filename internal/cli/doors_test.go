package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/kb"
)

// doorScript reads a file, then answers: the same scripted turn for every
// door.
const doorScript = `rounds:
  - calls:
      - {id: c1, name: read_file, args: {path: a.txt}}
  - text: it says alpha
`

// doorTurn is what a door left of its turn: the thread it ran on.
type doorTurn struct{ thread string }

// startServeStdio runs `rein serve --stdio` with args and returns its
// client, its input (closing it ends the server) and its exit code.
func startServeStdio(t *testing.T, args ...string) (*rpcClient, io.Closer, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		done <- mainIO(context.Background(), append([]string{"serve", "--stdio"}, args...), inR, outW, &errb)
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
	return c, inW, done
}

// TestEveryDoorKeepsTraceSpansAndSeed runs the same scripted turn through
// each door — rein run, chat's runtime, rein serve — and checks that each
// leaves the same items in the store, a trace rein trace can read, spans
// at the OpenTelemetry endpoint, and (with a knowledge base attached) the
// knowledge seed in its first user message. Chat and serve turns kept no
// trace, sent no spans and got no seed before the runtime attached them.
func TestEveryDoorKeepsTraceSpansAndSeed(t *testing.T) {
	doors := []struct {
		name string
		run  func(t *testing.T, db, dir, script string) doorTurn
	}{
		{"run", func(t *testing.T, db, dir, script string) doorTurn {
			code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--kb", "docs", "--model", "scripted:"+script, "--workspace", dir, "what does a.txt say about rate limits")
			if code != ExitCompleted {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			var out struct {
				ThreadID string `json:"thread_id"`
			}
			json.Unmarshal([]byte(lines[len(lines)-1]), &out)
			return doorTurn{thread: out.ThreadID}
		}},
		{"chat", func(t *testing.T, db, dir, script string) doorTurn {
			st, err := openStore(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			f := &turnFlags{model: "scripted:" + script, approval: "on-request", tools: toolFlags{capability: defaultCapability, kbs: []string{"docs"}}}
			spec, err := provider.ParseSpec(f.model)
			if err != nil {
				t.Fatal(err)
			}
			b, cfg := chatBackend(f, nil, spec, dir, st, nil, io.Discard)
			sched, stop, err := b.runtime(t.Context(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			th, err := sched.CreateThread(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tu, err := sched.Start(t.Context(), th.ID, llm.UserText("what does a.txt say about rate limits"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if tu, err = sched.Wait(ctx, th.ID, tu.ID); err != nil || tu.Status != session.TurnCompleted {
				t.Fatalf("chat turn: %s %s %v", tu.Status, tu.Error, err)
			}
			return doorTurn{thread: th.ID}
		}},
		{"serve", func(t *testing.T, db, dir, script string) doorTurn {
			c, in, done := startServeStdio(t, "--model", "scripted:"+script, "--db", db, "--kb", "docs", "--workspace", dir)
			c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
			th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
			c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "what does a.txt say about rate limits"}}})
			end := c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
			if got := end["params"].(map[string]any)["turn"].(map[string]any); got["status"] != "completed" {
				t.Errorf("turn/completed %v", got)
			}
			in.Close()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("serve exited %d", code)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("serve did not exit after its input closed")
			}
			return doorTurn{thread: th["id"].(string)}
		}},
	}
	for _, door := range doors {
		t.Run(door.name, func(t *testing.T) {
			clearKeys(t)
			clearOTel(t)
			var traces atomic.Int32
			otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/traces" {
					traces.Add(1)
				}
			}))
			defer otlp.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
			db := knowledgeDB(t)
			docs := t.TempDir()
			os.WriteFile(filepath.Join(docs, "limits.md"), []byte("# Limits\n\nRate limits allow ten requests a second.\n"), 0o644)
			mustRun(t, "kb", "add", "docs", docs)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)

			got := door.run(t, db, dir, writeScript(t, doorScript))

			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			items, err := st.Items(context.Background(), got.thread)
			if err != nil {
				t.Fatal(err)
			}
			var shape []string
			for _, it := range items {
				s := string(it.Role)
				for _, c := range it.Calls() {
					s += " call " + c.Name
				}
				if r := it.Result(); r != nil {
					s += " result " + strings.TrimSpace(r.Content)
				}
				if it.Role == llm.RoleAssistant && it.Text() != "" {
					s += " " + it.Text()
				}
				shape = append(shape, s)
			}
			if want := "user|assistant call read_file|tool result 1\talpha|assistant it says alpha"; strings.Join(shape, "|") != want {
				t.Errorf("stored items:\n%s\nwant\n%s", strings.Join(shape, "|"), want)
			}
			if len(items) == 0 || !strings.Contains(items[0].Text(), kb.SeedHeader) || !strings.Contains(items[0].Text(), "ten requests a second") {
				t.Errorf("the first user message has no knowledge seed:\n%s", items[0].Text())
			}
			raw, err := st.Trace(context.Background(), got.thread)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, r := range raw {
				var e event.Event
				json.Unmarshal(r, &e)
				types = append(types, string(e.Type))
			}
			trace := strings.Join(types, " ")
			for _, want := range []string{string(event.TurnStarted), string(event.ToolStarted), string(event.TurnCompleted)} {
				if !strings.Contains(trace, want) {
					t.Errorf("the stored trace lacks %s: %s", want, trace)
				}
			}
			if !strings.Contains(trace, string(kb.EventSources)) {
				t.Errorf("the trace does not report the seed's sources: %s", trace)
			}
			if code, _, stderr := runMain(t, context.Background(), "trace", got.thread, "--db", db, "--html", filepath.Join(t.TempDir(), "t.html")); code != ExitCompleted {
				t.Errorf("rein trace: exit %d, %s", code, stderr)
			}
			if traces.Load() == 0 {
				t.Error("no spans reached the OpenTelemetry endpoint")
			}
		})
	}
}
