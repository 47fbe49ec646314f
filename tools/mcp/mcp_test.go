package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	if s := add.Spec(); s.Access != tool.ReadOnly || s.NeedsApproval || !strings.Contains(string(s.Schema), `"a"`) {
		t.Errorf("add: %+v", s)
	}
	if s := echo.Spec(); s.Access != tool.Mutating || !s.NeedsApproval || s.Timeout <= DefaultCallTimeout {
		t.Errorf("echo: %+v", s)
	}
	if k := tool.KeysOf(echo, nil); len(k.Writes) != 1 || k.Writes[0] != "mcp:test" {
		t.Errorf("echo keys %+v", k)
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

func TestServerKilledMidCallIsAnErrorResult(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	func() {
		m, logs := start(t, stdioConfig(t, "test"))
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
		waitFor(t, func() bool { return strings.Contains(srv.stderr.String(), "hang: started") })
		if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		select {
		case r := <-done:
			if r.err != nil || !r.out.Failed || !strings.Contains(r.out.Text, `MCP server "test" stopped`) {
				t.Errorf("call in flight: %+v, %v", r.out, r.err)
			}
			if d := time.Since(killed); d > 5*time.Second {
				t.Errorf("the call returned %v after the server died", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the call hung after its server was killed")
		}
		// Later calls fail at once, with the same explanation.
		t0 := time.Now()
		if out := run(t, m, "test__echo", `{"text":"x"}`); !out.Failed || !strings.Contains(out.Text, "cannot be used") {
			t.Errorf("call to a dead server: %+v", out)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("a call to a dead server took %v", d)
		}
		waitFor(t, func() bool { return strings.Contains(logs.String(), "MCP server stopped") })
	}()
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
		for !strings.Contains(srv.stderr.String(), "hang: started") {
			time.Sleep(10 * time.Millisecond)
		}
		syscall.Kill(srv.cmd.Process.Pid, syscall.SIGKILL)
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
