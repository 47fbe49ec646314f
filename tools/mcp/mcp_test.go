package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"go.uber.org/goleak"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// syncLog is a slog destination the test reads while servers write.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, cfgs ...ServerConfig) (*Manager, *syncLog) {
	t.Helper()
	logs := &syncLog{}
	m, err := Start(context.Background(), cfgs, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, logs
}

func run(t *testing.T, m *Manager, name, args string) tool.Output {
	t.Helper()
	tl, ok := m.Lookup(name)
	if !ok {
		t.Fatalf("no deferred tool %s; have %v", name, m.Names())
	}
	out, err := tl.Run(context.Background(), tool.Call{Name: name, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

func TestManifestListsDeferredTools(t *testing.T) {
	m, _ := start(t, stdioConfig(t, "test"))
	want := "test__add: Add two integers.\n" +
		"test__echo: Echo the text back.\n" +
		"test__exit: Makes the server exit mid-call.\n" +
		"test__fail: Always fails.\n" +
		"test__getenv: Reads the server's environment.\n" +
		"test__hang: Never answers.\n" +
		"test__odd_name_: A name providers refuse.\n"
	if got := m.Manifest(); got != want {
		t.Errorf("manifest:\n%s\nwant:\n%s", got, want)
	}
	add, _ := m.Lookup("test__add")
	echo, _ := m.Lookup("test__echo")
	// An untrusted server's read-only hint spares the approval of the
	// default policy but does not make the tool read-only (see
	// TestTrustAndReadOnlyHint).
	if s := add.Spec(); s.Access != tool.Mutating || s.NeedsApproval || !strings.Contains(string(s.Schema), `"a"`) {
		t.Errorf("add: %+v", s)
	}
	if s := echo.Spec(); s.Access != tool.Mutating || !s.NeedsApproval || s.Timeout <= DefaultCallTimeout {
		t.Errorf("echo: %+v", s)
	}
	if k := tool.KeysOf(echo, nil); len(k.Writes) != 1 || k.Writes[0] != "mcp:test" {
		t.Errorf("echo keys %+v", k)
	}
}

// TestTrustAndReadOnlyHint: what the sandbox mode and the approval policy
// make of an MCP tool, by whether its server is trusted and whether it
// marks the tool read-only. In the read-only mode only a trusted server's
// read-only tools are offered (the others are withheld, with why); a
// read-only hint counts as read-only only from a trusted server.
func TestTrustAndReadOnlyHint(t *testing.T) {
	trusted := stdioConfig(t, "tr")
	trusted.Trusted = true
	m, _ := start(t, trusted, stdioConfig(t, "un"))
	const (
		ask, allow, refuse = tool.Ask, tool.Allow, tool.Refuse
	)
	tests := []struct {
		readOnly, trusted, hint bool
		// withheld is a part of why the tool is withheld; "" means offered.
		withheld string
		// verdicts under on-request, untrusted and never, when offered.
		onRequest, untrusted, never tool.Verdict
	}{
		{false, false, false, "", ask, ask, refuse},
		{false, false, true, "", allow, ask, allow},
		{false, true, false, "", allow, ask, allow},
		{false, true, true, "", allow, allow, allow},
		{true, false, false, `MCP server "un" is not trusted and does not mark the tool read-only`, 0, 0, 0},
		{true, false, true, `MCP server "un" is not trusted, so its read-only hint does not count (trusted = true in [mcp.servers.un] makes it count)`, 0, 0, 0},
		{true, true, false, `MCP server "tr" does not mark the tool read-only (readOnlyHint)`, 0, 0, 0},
		{true, true, true, "", allow, allow, allow},
	}
	for _, tt := range tests {
		srv, name := "un", "echo"
		if tt.trusted {
			srv = "tr"
		}
		if tt.hint {
			name = "add"
		}
		qualified := srv + "__" + name
		mode := "workspace-write"
		if tt.readOnly {
			mode = "read-only"
		}
		t.Run(fmt.Sprintf("%s/trusted=%v/readOnlyHint=%v", mode, tt.trusted, tt.hint), func(t *testing.T) {
			o := m.Offer(tt.readOnly)
			tl, offered := o.Lookup(qualified)
			why, held := o.WithheldReason(qualified)
			inManifest := strings.Contains(o.Manifest(), qualified+":")
			if tt.withheld != "" {
				if offered || !held || inManifest || slices.Contains(o.Names(), qualified) {
					t.Fatalf("offered %v, withheld %v, in the manifest %v; want it withheld", offered, held, inManifest)
				}
				if !strings.HasPrefix(why, "the sandbox mode is read-only, and ") || !strings.Contains(why, tt.withheld) {
					t.Errorf("why: %q, want it to say %q", why, tt.withheld)
				}
				if o.Withheld()[qualified] != why {
					t.Errorf("Withheld() disagrees: %v", o.Withheld())
				}
				// load_tools says why instead of loading it.
				live := tool.NewSet()
				out := load(o, live, []string{qualified})
				if !out.Failed || !strings.Contains(out.Text, "not available in this turn: "+qualified+" (the sandbox mode is read-only") || len(live.Names()) != 0 {
					t.Errorf("load_tools of a withheld tool: %+v, live %v", out, live.Names())
				}
				return
			}
			if !offered || held || !inManifest {
				t.Fatalf("offered %v, withheld %v (%s), in the manifest %v; want it offered", offered, held, why, inManifest)
			}
			spec := tl.Spec()
			for _, v := range []struct {
				p    tool.Policy
				want tool.Verdict
			}{{tool.PolicyOnRequest, tt.onRequest}, {tool.PolicyUntrusted, tt.untrusted}, {tool.PolicyNever, tt.never}} {
				if got := v.p.Verdict(spec); got != v.want {
					t.Errorf("policy %s: verdict %v, want %v (spec %+v)", v.p, got, v.want, spec)
				}
			}
			if readOnly := spec.Access == tool.ReadOnly; readOnly != (tt.trusted && tt.hint) {
				t.Errorf("access %v: read-only only on a trusted server's word", spec.Access)
			}
		})
	}
}

func TestLoadToolsAddsToTheLiveSet(t *testing.T) {
	m, _ := start(t, stdioConfig(t, "test"))
	live := tool.NewSet()
	load := LoadTools(m, live)
	live.Add(load)
	if load.Spec().Access != tool.Mutating {
		t.Errorf("load_tools access %v", load.Spec().Access)
	}
	cases := []struct {
		names  []string
		want   []string
		failed bool
		inSet  []string
	}{
		{[]string{"test__echo", "nope", "test__add", "test__echo"}, []string{"loaded: test__echo, test__add;", "unknown: nope; deferred tools: test__add, test__echo"}, false, []string{"load_tools", "test__echo", "test__add"}},
		{[]string{"test__echo"}, []string{"already loaded: test__echo."}, false, []string{"load_tools", "test__echo", "test__add"}},
		{[]string{"missing"}, []string{"unknown: missing;"}, true, []string{"load_tools", "test__echo", "test__add"}},
		{nil, []string{`load_tools needs "names"`}, true, []string{"load_tools", "test__echo", "test__add"}},
	}
	for _, c := range cases {
		before := live.Version()
		args, _ := json.Marshal(map[string]any{"names": c.names})
		out, err := load.Run(context.Background(), tool.Call{Args: args})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(out.Text, w) {
				t.Errorf("%v: %q lacks %q", c.names, out.Text, w)
			}
		}
		if out.Failed != c.failed {
			t.Errorf("%v: failed %v, want %v (%s)", c.names, out.Failed, c.failed, out.Text)
		}
		if got := strings.Join(live.Names(), ","); got != strings.Join(c.inSet, ",") {
			t.Errorf("%v: live set %s, want %v", c.names, got, c.inSet)
		}
		if strings.HasPrefix(out.Text, "loaded") == (live.Version() == before) {
			t.Errorf("%v: version %d → %d", c.names, before, live.Version())
		}
	}
}

func TestCallsReturnResults(t *testing.T) {
	m, _ := start(t, stdioConfig(t, "test"))
	for _, c := range []struct {
		name, args, want string
		failed           bool
	}{
		{"test__echo", `{"text":"hi"}`, "echo: hi", false},
		{"test__add", `{"a":2,"b":3}`, `{"sum":5}`, false},
		{"test__fail", `{}`, "the fail tool failed as asked", true},
		{"test__odd_name_", ``, "odd", false},
	} {
		out := run(t, m, c.name, c.args)
		if out.Text != c.want || out.Failed != c.failed {
			t.Errorf("%s: %+v, want %q failed=%v", c.name, out, c.want, c.failed)
		}
	}
}

func TestStdioServerGetsOnlyTheSecretsItsConfigNames(t *testing.T) {
	t.Setenv("REIN_MCP_TEST_TOKEN", "tok-secret")
	cfg := stdioConfig(t, "test")
	cfg.Env["GIVEN"] = "${REIN_MCP_TEST_TOKEN}"
	m, _ := start(t, cfg)
	if out := run(t, m, "test__getenv", `{"text":"REIN_MCP_TEST_TOKEN"}`); out.Text != "[]" {
		t.Errorf("an unnamed secret reached the server: %q", out.Text)
	}
	if out := run(t, m, "test__getenv", `{"text":"GIVEN"}`); out.Text != "[tok-secret]" {
		t.Errorf("the configured variable: %q", out.Text)
	}
}

func TestStreamableHTTPServer(t *testing.T) {
	t.Setenv("REIN_MCP_TEST_HEADER", "Bearer from-env")
	var mu sync.Mutex
	var auth []string
	h := httpHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	m, _ := start(t, ServerConfig{Name: "web", URL: srv.URL, Headers: map[string]string{"Authorization": "$REIN_MCP_TEST_HEADER"}})
	if out := run(t, m, "web__echo", `{"text":"over http"}`); out.Text != "echo: over http" || out.Failed {
		t.Errorf("echo over HTTP: %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auth {
		if a != "Bearer from-env" {
			t.Errorf("a request carried Authorization %q", a)
		}
	}
	if len(auth) == 0 {
		t.Error("no request reached the server")
	}
}

func TestCallTimesOutPerServer(t *testing.T) {
	cfg := stdioConfig(t, "test")
	cfg.CallTimeout = 300 * time.Millisecond
	m, _ := start(t, cfg)
	start := time.Now()
	out := run(t, m, "test__hang", `{}`)
	if !out.Failed || !strings.Contains(out.Text, "did not answer within 300ms") {
		t.Errorf("hang: %+v", out)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a 300ms call timeout took %v", d)
	}
	// The server is still there for the next call.
	if out := run(t, m, "test__echo", `{"text":"still"}`); out.Text != "echo: still" {
		t.Errorf("after a timeout: %+v", out)
	}
}

// TestServerKilledMidCallIsAnErrorResult: the call under way when the
// server dies is an error result, promptly, and is not sent again; the next
// call restarts the server and runs on it.
func TestServerKilledMidCallIsAnErrorResult(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	func() {
		cfg, calls := countedConfig(t)
		m, logs := start(t, cfg)
		defer m.Close()
		srv := m.servers[0]
		type res struct {
			out tool.Output
			err error
		}
		done := make(chan res, 1)
		hang, _ := m.Lookup("test__hang")
		go func() {
			out, err := hang.Run(context.Background(), tool.Call{Args: json.RawMessage(`{}`)})
			done <- res{out, err}
		}()
		waitFor(t, func() bool { return strings.Contains(srv.output(), "hang: started") })
		first := pid(t, srv)
		if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		select {
		case r := <-done:
			if r.err != nil || !r.out.Failed || !strings.Contains(r.out.Text, `MCP server "test" stopped`) || !strings.Contains(r.out.Text, "may or may not have run") {
				t.Errorf("call in flight: %+v, %v", r.out, r.err)
			}
			if d := time.Since(killed); d > 5*time.Second {
				t.Errorf("the call returned %v after the server died", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the call hung after its server was killed")
		}
		// The next call restarts the server and runs on it.
		if out := run(t, m, "test__echo", `{"text":"x"}`); out.Failed || out.Text != "echo: x" {
			t.Errorf("call after the server died: %+v", out)
		}
		if second := pid(t, srv); second == first {
			t.Errorf("the server was not restarted: pid %d", second)
		}
		// The hang call, which may have run, was not sent again.
		if got := calls(); !slices.Equal(got, []string{"hang", "echo"}) {
			t.Errorf("calls the servers received: %v, want [hang echo]", got)
		}
		waitFor(t, func() bool { return strings.Contains(logs.String(), "MCP server stopped") })
	}()
}

// countedConfig is the test server's config with its calls logged to a
// file; calls returns the names of the tools called, in order.
func countedConfig(t *testing.T) (ServerConfig, func() []string) {
	t.Helper()
	cfg := stdioConfig(t, "test")
	p := filepath.Join(t.TempDir(), "calls")
	cfg.Env[callsEnv] = p
	return cfg, func() []string {
		b, _ := os.ReadFile(p)
		var out []string
		for l := range strings.Lines(string(b)) {
			name, _, _ := strings.Cut(strings.TrimSpace(l), " ")
			out = append(out, name)
		}
		return out
	}
}

// pid is the process id of the server's current process.
func pid(t *testing.T, s *server) int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || s.cur.cmd == nil || s.cur.cmd.Process == nil {
		t.Fatal("the server has no process")
	}
	return s.cur.cmd.Process.Pid
}

// kill kills the server's process and waits until rein has seen it die.
func kill(t *testing.T, s *server) {
	t.Helper()
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if err := syscall.Kill(c.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.gone.Err() != nil })
}

// shortRestarts makes restarts quick for the test.
func shortRestarts(t *testing.T, every time.Duration) {
	prev := restartEvery
	restartEvery = every
	t.Cleanup(func() { restartEvery = prev })
}

func TestKilledServerIsRestartedByTheNextCall(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shortRestarts(t, 100*time.Millisecond)
	func() {
		m, logs := start(t, stdioConfig(t, "test"))
		defer m.Close()
		srv := m.servers[0]
		for i := range 3 {
			before := pid(t, srv)
			kill(t, srv)
			t0 := time.Now()
			if out := run(t, m, "test__add", `{"a":1,"b":2}`); out.Failed || out.Text != `{"sum":3}` {
				t.Fatalf("restart %d: %+v", i+1, out)
			}
			if after := pid(t, srv); after == before {
				t.Errorf("restart %d: same pid %d", i+1, after)
			}
			// The first restart goes at once; later ones wait for the rest
			// of restartEvery since the one before.
			if d := time.Since(t0); i == 0 && d > 5*time.Second {
				t.Errorf("restart %d took %v", i+1, d)
			}
		}
		// Answered calls reset the count: three restarts are not three
		// in a row.
		srv.mu.Lock()
		tries := srv.tries
		srv.mu.Unlock()
		if tries != 0 {
			t.Errorf("restarts in a row after answered calls: %d", tries)
		}
		if n := strings.Count(logs.String(), "MCP server stopped"); n != 3 {
			t.Errorf("%d warnings that the server stopped, want 3:\n%s", n, logs.String())
		}
	}()
}

func TestRestartsAreSpacedOut(t *testing.T) {
	shortRestarts(t, 700*time.Millisecond)
	m, _ := start(t, stdioConfig(t, "test"))
	srv := m.servers[0]
	kill(t, srv)
	if out := run(t, m, "test__echo", `{"text":"1"}`); out.Failed {
		t.Fatalf("first restart: %+v", out)
	}
	srv.mu.Lock()
	last := srv.lastTry
	srv.mu.Unlock()
	kill(t, srv)
	if out := run(t, m, "test__echo", `{"text":"2"}`); out.Failed {
		t.Fatalf("second restart: %+v", out)
	}
	srv.mu.Lock()
	next := srv.lastTry
	srv.mu.Unlock()
	if gap := next.Sub(last); gap < 700*time.Millisecond {
		t.Errorf("two restarts %v apart, want at least 700ms", gap)
	}
}

func TestConcurrentCallsShareOneRestart(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	func() {
		m, logs := start(t, stdioConfig(t, "test"))
		defer m.Close()
		kill(t, m.servers[0])
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				text := fmt.Sprint(i)
				if out := run(t, m, "test__echo", `{"text":"`+text+`"}`); out.Failed || out.Text != "echo: "+text {
					t.Errorf("call %d: %+v", i, out)
				}
			})
		}
		wg.Wait()
		if n := strings.Count(logs.String(), "MCP server restarted"); n != 1 {
			t.Errorf("%d restarts for 8 calls at once, want 1:\n%s", n, logs.String())
		}
	}()
}

// TestServerThatDiesAtEveryStartEndsDown: every restart fails; each call
// makes at most one attempt and returns promptly; after maxRestarts the
// tools fail at once with a result saying the server is down, its command
// and the last line it printed.
func TestServerThatDiesAtEveryStartEndsDown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shortRestarts(t, 50*time.Millisecond)
	func() {
		cfg := stdioConfig(t, "test")
		refuse := filepath.Join(t.TempDir(), "refuse")
		cfg.Env[refuseEnv] = refuse
		m, logs := start(t, cfg)
		defer m.Close()
		if err := os.WriteFile(refuse, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		kill(t, m.servers[0])
		for i := 1; i <= maxRestarts; i++ {
			t0 := time.Now()
			out := run(t, m, "test__echo", `{"text":"x"}`)
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("attempt %d took %v", i, d)
			}
			want := fmt.Sprintf("did not restart (attempt %d of %d", i, maxRestarts)
			if i == maxRestarts {
				want = `MCP server "test" is down`
			}
			if !out.Failed || !strings.Contains(out.Text, want) || !strings.Contains(out.Text, "refusing to start") {
				t.Errorf("attempt %d: %q, want it to say %q and the server's last line", i, out.Text, want)
			}
		}
		t0 := time.Now()
		out := run(t, m, "test__add", `{"a":1,"b":1}`)
		for _, w := range []string{`MCP server "test" is down`, "5 restarts in a row", "run its command by hand: " + cfg.Command + " '-test.run=^$'",
			"with the env of [mcp.servers.test]", "its last stderr line: test server: refusing to start: " + refuse + " exists"} {
			if !strings.Contains(out.Text, w) {
				t.Errorf("after the last attempt: %q lacks %q", out.Text, w)
			}
		}
		if d := time.Since(t0); d > 100*time.Millisecond {
			t.Errorf("a call to a server that is down took %v", d)
		}
		if !strings.Contains(logs.String(), "level=ERROR") || strings.Count(logs.String(), "MCP server did not restart") != maxRestarts {
			t.Errorf("logs:\n%s", logs.String())
		}
	}()
}

// TestCloseStopsARestartUnderWay: closing the manager while a call waits to
// restart the server ends the call at once, with nothing left running.
func TestCloseStopsARestartUnderWay(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shortRestarts(t, time.Minute)
	func() {
		m, _ := start(t, stdioConfig(t, "test"))
		srv := m.servers[0]
		kill(t, srv)
		run(t, m, "test__echo", `{}`) // the first restart is at once
		kill(t, srv)
		done := make(chan tool.Output, 1)
		go func() { done <- run(t, m, "test__echo", `{}`) }()
		waitFor(t, func() bool {
			srv.mu.Lock()
			defer srv.mu.Unlock()
			return srv.restarting != nil
		})
		t0 := time.Now()
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		select {
		case out := <-done:
			if !out.Failed || !strings.Contains(out.Text, "rein is stopping its MCP servers") {
				t.Errorf("the waiting call: %+v", out)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting call did not end when the manager closed")
		}
		if d := time.Since(t0); d > 3*time.Second {
			t.Errorf("close took %v", d)
		}
	}()
}

// TestHTTPServerThatForgotTheSessionIsReconnected: an HTTP server that
// restarted answers the old session with 404; the call, which it did not
// run, is sent once more on a new session and runs once.
func TestHTTPServerThatForgotTheSessionIsReconnected(t *testing.T) {
	var mu sync.Mutex
	h := httpHandler()
	gen, calls := 0, map[int]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur, g := h, gen
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			mu.Lock()
			calls[g]++
			mu.Unlock()
		}
		cur.ServeHTTP(w, r)
	}))
	defer srv.Close()
	m, _ := start(t, ServerConfig{Name: "web", URL: srv.URL})
	if out := run(t, m, "web__echo", `{"text":"one"}`); out.Text != "echo: one" {
		t.Fatalf("first call: %+v", out)
	}
	// The server restarts: a new handler knows no sessions.
	mu.Lock()
	h, gen = httpHandler(), 1
	mu.Unlock()
	if out := run(t, m, "web__echo", `{"text":"two"}`); out.Failed || out.Text != "echo: two" {
		t.Errorf("call after the server forgot the session: %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	// The old session's call reached the new server (404, not run), then
	// the new session's ran: gen 1 saw two tools/call requests, one run.
	if calls[0] != 1 || calls[1] != 2 {
		t.Errorf("tools/call requests by server generation: %v", calls)
	}
}

// TestHTTPCallInFlightWhenTheSessionIsLostIsNotSentAgain: when a call finds
// the session gone, the SDK fails the other calls in flight with its
// error; those may have run, so they are error results, not sent again.
func TestHTTPCallInFlightWhenTheSessionIsLostIsNotSentAgain(t *testing.T) {
	var mu sync.Mutex
	h := httpHandler()
	hangs := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur := h
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"name":"hang"`)) {
			mu.Lock()
			hangs++
			mu.Unlock()
		}
		cur.ServeHTTP(w, r)
	}))
	defer srv.Close()
	m, _ := start(t, ServerConfig{Name: "web", URL: srv.URL})
	done := make(chan tool.Output, 1)
	go func() { done <- run(t, m, "web__hang", `{}`) }()
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return hangs == 1
	})
	mu.Lock()
	h = httpHandler()
	mu.Unlock()
	if out := run(t, m, "web__echo", `{"text":"after"}`); out.Failed || out.Text != "echo: after" {
		t.Errorf("the call that found the session gone: %+v", out)
	}
	select {
	case out := <-done:
		if !out.Failed || !strings.Contains(out.Text, "may or may not have run") {
			t.Errorf("the call in flight: %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight hung")
	}
	mu.Lock()
	defer mu.Unlock()
	if hangs != 1 {
		t.Errorf("the hang call reached the servers %d times, want once", hangs)
	}
}

func TestServerExitingMidCallIsAnErrorResult(t *testing.T) {
	m, logs := start(t, stdioConfig(t, "test"))
	out := run(t, m, "test__exit", `{}`)
	if !out.Failed || !strings.Contains(out.Text, "stopped") || !strings.Contains(out.Text, "the server is going away") {
		t.Errorf("exit: %+v", out)
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning logged: %s", logs.String())
	}
	if err := m.Close(); err != nil {
		t.Errorf("closing after the server died: %v", err)
	}
}

func TestInterruptedCallReturnsTheContextError(t *testing.T) {
	m, _ := start(t, stdioConfig(t, "test"))
	hang, _ := m.Lookup("test__hang")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := hang.Run(ctx, tool.Call{Args: json.RawMessage(`{}`)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the caller's deadline", err)
	}
}

func TestServersThatCannotStartAreLeftOut(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	func() {
		silent := ServerConfig{Name: "silent", Command: "sleep", Args: []string{"30"}, StartTimeout: 500 * time.Millisecond}
		missing := ServerConfig{Name: "missing", Command: "/does/not/exist"}
		t0 := time.Now()
		m, logs := start(t, silent, missing, stdioConfig(t, "test"))
		defer m.Close()
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("start took %v with a 500ms start timeout", d)
		}
		probs := m.Problems()
		if len(probs) != 2 || !strings.Contains(probs[0].Error(), `"silent": not ready within 500ms`) || !strings.Contains(probs[1].Error(), `"missing"`) {
			t.Errorf("problems %v", probs)
		}
		if len(m.Names()) == 0 || !strings.HasPrefix(m.Names()[0], "test__") {
			t.Errorf("the working server's tools: %v", m.Names())
		}
		if strings.Count(logs.String(), "MCP server left out") != 2 {
			t.Errorf("warnings: %s", logs.String())
		}
	}()
}

func TestBadConfigsAreRefused(t *testing.T) {
	for _, cfgs := range [][]ServerConfig{
		{{Name: "", Command: "x"}},
		{{Name: "bad name", Command: "x"}},
		{{Name: "a"}},
		{{Name: "a", Command: "x", URL: "http://x"}},
		{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}},
		{{Name: "a", Command: "x", CallTimeout: -1}},
	} {
		if _, err := Start(context.Background(), cfgs, Options{}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: error %v, want ErrConfig", cfgs, err)
		}
	}
}

func TestQualifiedName(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"gh", "search_issues", "gh__search_issues"},
		{"gh", "get.file contents", "gh__get_file_contents"},
		{"s", strings.Repeat("x", 100), "s__" + strings.Repeat("x", 61)},
	} {
		if got := QualifiedName(c.server, c.tool); got != c.want {
			t.Errorf("QualifiedName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
}

// TestTurnLoadsAndCallsDeferredTools runs real turns through the engine:
// the model sees only load_tools, loads a tool, gets it offered in the next
// round, calls it; then the server dies mid-call and the turn still
// completes.
func TestTurnLoadsAndCallsDeferredTools(t *testing.T) {
	// Trusted: the engine asks no approval for its tools.
	cfg := stdioConfig(t, "test")
	cfg.Trusted = true
	m, _ := start(t, cfg)
	live := tool.NewSet()
	live.Add(LoadTools(m, live))
	model, err := scripted.Parse([]byte(`rounds:
  - calls:
      - {name: load_tools, args: {names: [test__echo, test__hang]}}
    expect:
      - tools: [load_tools]
  - calls:
      - {name: test__echo, args: {text: from the turn}}
    expect:
      - tools: [load_tools, test__echo, test__hang]
      - result: {tool: load_tools, contains: "loaded: test__echo, test__hang"}
  - calls:
      - {name: test__hang, args: {}}
    expect:
      - result: {tool: test__echo, contains: "echo: from the turn"}
  - text: the server went away
    expect:
      - result: {tool: test__hang, contains: "stopped"}
`))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := loop.New(loop.Options{Model: model, Tools: live})
	if err != nil {
		t.Fatal(err)
	}
	srv := m.servers[0]
	go func() {
		// Kill the server once the hang call is under way.
		for !strings.Contains(srv.output(), "hang: started") {
			time.Sleep(10 * time.Millisecond)
		}
		srv.mu.Lock()
		p := srv.cur.cmd.Process.Pid
		srv.mu.Unlock()
		syscall.Kill(p, syscall.SIGKILL)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := eng.Run(ctx, loop.Turn{Input: []llm.Item{llm.UserText("use the test server")}})
	if err != nil {
		t.Fatalf("%v (script: %v)", err, model.Verify())
	}
	if out.Status != loop.StatusCompleted || out.Answer != "the server went away" {
		t.Errorf("outcome %+v", out)
	}
	if err := model.Verify(); err != nil {
		t.Error(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
	}
}

// TestConfigFromTOML decodes the example of ServerConfig's documentation,
// as a config file holding [mcp.servers.NAME] tables would.
func TestConfigFromTOML(t *testing.T) {
	var file struct {
		MCP struct {
			Servers map[string]ServerConfig `toml:"servers"`
		} `toml:"mcp"`
	}
	_, err := toml.Decode(`
[mcp.servers.github]
command = "github-mcp-server"
args    = ["stdio"]
env     = { GITHUB_PERSONAL_ACCESS_TOKEN = "$GITHUB_TOKEN" }

[mcp.servers.docs]
url          = "http://127.0.0.1:8931/mcp"
headers      = { Authorization = "Bearer $DOCS_TOKEN" }
call_timeout = "2m"
`, &file)
	if err != nil {
		t.Fatal(err)
	}
	gh, docs := file.MCP.Servers["github"], file.MCP.Servers["docs"]
	if gh.Command != "github-mcp-server" || len(gh.Args) != 1 || gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "$GITHUB_TOKEN" {
		t.Errorf("github: %+v", gh)
	}
	if docs.URL != "http://127.0.0.1:8931/mcp" || docs.CallTimeout != 2*time.Minute || docs.Headers["Authorization"] == "" {
		t.Errorf("docs: %+v", docs)
	}
}
