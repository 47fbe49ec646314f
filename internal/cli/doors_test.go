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

	library "github.com/reinhq/rein"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/redact"
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

// doorSecret is a provider key the doors' environment holds: not
// token-shaped, so only the runtime's redactor (the configured key
// variables) knows to hide it. a.txt holds it.
const doorSecret = "door-credential-4242-plain"

// doorWant is the stored items of doorScript's turn, a result by its first
// line.
const doorWant = "user|assistant call read_file|tool result 1\talpha|assistant it says alpha"

// doorEnv is where a door runs its turn: the store, the thread's
// workspace (dir, which holds a.txt), another directory a door defaults to
// (elsewhere: a turn that reads a.txt ran in the thread's workspace), the
// script and the spans the OpenTelemetry endpoint has received.
type doorEnv struct {
	db, dir, elsewhere, script string
	spans                      *atomic.Int32
}

// doorTurn is what a door left of its turn: the thread it ran on, and the
// stored items it should have (doorWant when empty).
type doorTurn struct{ thread, want string }

// startServeStdio runs `rein serve --stdio` with args and returns its
// client, its input (closing it ends the server) and its exit code.
func startServeStdio(t *testing.T, args ...string) (*rpcClient, io.Closer, <-chan int) {
	t.Helper()
	return startServeStdioErr(t, new(strings.Builder), args...)
}

// startServeStdioErr is startServeStdio writing the server's stderr to
// errb, to be read once its exit code has arrived.
func startServeStdioErr(t *testing.T, errb *strings.Builder, args ...string) (*rpcClient, io.Closer, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- mainIO(context.Background(), append([]string{"serve", "--stdio"}, args...), inR, outW, errb)
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
// each door — rein run, rein answer, chat's runtime, rein serve, and the
// library facade (rein.New) — and checks that each leaves the same items
// in the store (a provider key in a file the model reads redacted), a trace
// rein trace can read, spans at the OpenTelemetry endpoint, and (with a
// knowledge base attached) the knowledge seed in its first user message;
// the thread's workspace is honoured where the door's default is another
// directory. Chat and serve turns kept no trace, sent no spans and got no
// seed before the runtime attached them; rein answer's part of a turn kept
// no trace and sent no spans of its own before it ran on the runtime; the
// facade ran its own engine, in memory, with none of them.
func TestEveryDoorKeepsTraceSpansAndSeed(t *testing.T) {
	const prompt = "what does a.txt say about rate limits"
	doors := []struct {
		name string
		run  func(t *testing.T, e doorEnv) doorTurn
	}{
		{"run", func(t *testing.T, e doorEnv) doorTurn {
			code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", e.db, "--kb", "docs", "--model", "scripted:"+e.script, "--workspace", e.dir, prompt)
			if code != ExitCompleted {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			return doorTurn{thread: outcomeOf(t, stdout)["thread_id"].(string)}
		}},
		{"answer", func(t *testing.T, e doorEnv) doorTurn {
			ask := writeScript(t, "rounds:\n  - calls:\n      - {id: q1, name: ask_user, args: {questions: [{prompt: \"Which file?\"}]}}\n")
			code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", e.db, "--kb", "docs", "--model", "scripted:"+ask, "--workspace", e.dir, prompt)
			if code != ExitPaused {
				t.Fatalf("run: exit %d, want paused\n%s", code, stderr)
			}
			thread := outcomeOf(t, stdout)["thread_id"].(string)
			before := e.spans.Load()
			// No --workspace: the answered turn runs in the thread's.
			code, stdout, stderr = runMain(t, context.Background(), "answer", "--json", "--db", e.db, "--kb", "docs", "--model", "scripted:"+e.script, thread, "a.txt")
			if code != ExitCompleted {
				t.Fatalf("answer: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if e.spans.Load() == before {
				t.Error("the answered part of the turn sent no spans")
			}
			return doorTurn{thread: thread, want: "user|assistant call ask_user|tool result User answered: a.txt|" + strings.TrimPrefix(doorWant, "user|")}
		}},
		{"chat", func(t *testing.T, e doorEnv) doorTurn {
			st, err := openStore(t.Context(), e.db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			f := &turnFlags{model: "scripted:" + e.script, approval: "on-request", tools: toolFlags{capability: defaultCapability, kbs: []string{"docs"}}}
			spec, err := provider.ParseSpec(f.model)
			if err != nil {
				t.Fatal(err)
			}
			b, cfg := chatBackend(f, nil, spec, e.elsewhere, st, nil, io.Discard)
			sched, stop, err := b.runtime(t.Context(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			cfg.Workspace = e.dir
			th, err := sched.CreateThread(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tu, err := sched.Start(t.Context(), th.ID, llm.UserText(prompt))
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
		{"serve", func(t *testing.T, e doorEnv) doorTurn {
			c, in, done := startServeStdio(t, "--model", "scripted:"+e.script, "--db", e.db, "--kb", "docs", "--workspace", e.elsewhere)
			c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
			th := c.call("thread/start", map[string]any{"workspace": e.dir})["thread"].(map[string]any)
			c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": prompt}}})
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
		{"serve, the base picked by thread/start", func(t *testing.T, e doorEnv) doorTurn {
			// No --kb: the thread's own knowledgeBases attach docs.
			c, in, done := startServeStdio(t, "--model", "scripted:"+e.script, "--db", e.db, "--workspace", e.elsewhere)
			init := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
			if kbs, _ := init["defaults"].(map[string]any)["knowledgeBases"].([]any); len(kbs) != 1 || kbs[0] != "docs" {
				t.Errorf("initialize defaults.knowledgeBases = %v, want [docs]", kbs)
			}
			th := c.call("thread/start", map[string]any{"workspace": e.dir, "knowledgeBases": []string{"docs"}})["thread"].(map[string]any)
			c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": prompt}}})
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
		{"library", func(t *testing.T, e doorEnv) doorTurn {
			// What a Go program does: the facade, one import, its model
			// opened from a spec, one turn run to its end.
			model, err := library.OpenModel("scripted:"+e.script, library.ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := library.New(library.Options{
				Model: model, Workspace: e.dir, DB: e.db, KnowledgeBases: []string{"docs"}, OpenTelemetry: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			th := a.NewThread()
			out, err := th.Run(ctx, prompt)
			if err != nil || out.Status != library.StatusCompleted {
				t.Fatalf("library turn: %+v %v", out, err)
			}
			if err := a.Close(ctx); err != nil {
				t.Error(err)
			}
			return doorTurn{thread: th.ID()}
		}},
	}
	for _, door := range doors {
		t.Run(door.name, func(t *testing.T) {
			clearKeys(t)
			clearOTel(t)
			t.Setenv("ANTHROPIC_API_KEY", doorSecret)
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
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"+doorSecret+"\n"), 0o644)

			got := door.run(t, doorEnv{db: db, dir: dir, elsewhere: t.TempDir(), script: writeScript(t, doorScript), spans: &traces})
			want := got.want
			if want == "" {
				want = doorWant
			}
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
				s := it.Role.String()
				for _, c := range it.Calls() {
					s += " call " + c.Name
				}
				if r := it.Result(); r != nil {
					first, _, _ := strings.Cut(strings.TrimSpace(r.Content), "\n")
					s += " result " + first
					if r.Name == "read_file" && !strings.Contains(r.Content, redact.Mask) {
						t.Errorf("the key in a.txt is not redacted: %q", r.Content)
					}
				}
				if it.Role == llm.RoleAssistant && it.Text() != "" {
					s += " " + it.Text()
				}
				shape = append(shape, s)
			}
			if strings.Join(shape, "|") != want {
				t.Errorf("stored items:\n%s\nwant\n%s", strings.Join(shape, "|"), want)
			}
			if len(items) == 0 || !strings.Contains(items[0].Text(), kb.SeedHeader) || !strings.Contains(items[0].Text(), "ten requests a second") {
				t.Errorf("the first user message has no knowledge seed:\n%s", items[0].Text())
			}
			for _, it := range items {
				if b, _ := json.Marshal(it); strings.Contains(string(b), doorSecret) {
					t.Errorf("a stored item holds the key: %s", b)
				}
			}
			raw, err := st.Trace(context.Background(), got.thread)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range raw {
				if strings.Contains(string(r), doorSecret) {
					t.Errorf("the stored trace holds the key: %s", r)
				}
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
