package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const twoReadsScript = `rounds:
  - text: Reading both.
    calls:
      - {name: read_file, args: {path: a.txt}}
      - {name: read_file, args: {path: b.txt}}
    usage: {input_tokens: 100, output_tokens: 10}
  - text: alpha and beta
    usage: {input_tokens: 130, output_tokens: 4}
`

func twoFileWorkspace(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o644)
	return dir
}

// TestRunEventsThenTrace records a turn with --events and writes its page
// with rein trace.
func TestRunEventsThenTrace(t *testing.T) {
	clearKeys(t)
	clearOTel(t)
	dir := twoFileWorkspace(t)
	events := filepath.Join(t.TempDir(), "turn.jsonl")
	code, _, stderr := runMain(t, context.Background(), "run", "--events", events, "--model", "scripted:"+writeScript(t, twoReadsScript), "--workspace", dir, "read both")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d, stderr %s", code, stderr)
	}
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"turn_started"`, `"type":"tool_started"`, `"type":"usage"`, `"type":"turn_completed"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the events file lacks %s", want)
		}
	}

	page := filepath.Join(t.TempDir(), "trace.html")
	code, _, stderr = runMain(t, context.Background(), "trace", "--events", events, "--html", page)
	if code != ExitCompleted || !strings.Contains(stderr, "2 rounds, completed") {
		t.Fatalf("trace: exit %d, stderr %s", code, stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="row tool status-ok"`, `<pre class="answer" id="answer">alpha and beta</pre>`, `<td class="num">130</td>`, "read both"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := strings.Count(string(html), `class="row tool status-ok"`); n != 2 {
		t.Errorf("%d tool rows, want 2", n)
	}
}

func TestTraceUsageErrors(t *testing.T) {
	events := filepath.Join(t.TempDir(), "e.jsonl")
	os.WriteFile(events, []byte(`{"type":"turn_started","turn_id":"turn_a","time":"2026-01-01T00:00:00Z"}`+"\n"), 0o644)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{oops\n"), 0o644)
	out := filepath.Join(t.TempDir(), "p.html")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a thread needs the page", []string{"trace", "thread_x"}, "rein trace THREAD --html OUT"},
		{"no events", []string{"trace", "--html", out}, "--events FILE --html OUT"},
		{"no page", []string{"trace", "--events", events}, "--events FILE --html OUT"},
		{"a missing file", []string{"trace", "--events", "/does/not/exist", "--html", out}, "no such file"},
		{"a bad line", []string{"trace", "--events", bad, "--html", out}, "event 1"},
		{"an unknown turn", []string{"trace", "--events", events, "--html", out, "--turn", "turn_b"}, "they hold turn_a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, context.Background(), tt.args...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed trace left a page behind: %v", err)
	}
}

// clearOTel keeps the machine's own OTEL_* settings out of a test.
func clearOTel(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
}

// TestRunExportsSpansWhenAnEndpointIsSet: with OTEL_EXPORTER_OTLP_ENDPOINT
// set, rein run sends the turn's spans and metrics there before it exits.
func TestRunExportsSpansWhenAnEndpointIsSet(t *testing.T) {
	clearKeys(t)
	clearOTel(t)
	var traces, metrics atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/traces":
			traces.Add(1)
		case "/v1/metrics":
			metrics.Add(1)
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	code, _, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+writeScript(t, twoReadsScript), "--workspace", twoFileWorkspace(t), "read both")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d, stderr %s", code, stderr)
	}
	if traces.Load() == 0 || metrics.Load() == 0 {
		t.Errorf("posts: %d traces, %d metrics; want both", traces.Load(), metrics.Load())
	}

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	code, _, stderr = runMain(t, context.Background(), "run", "--model", "scripted:"+writeScript(t, twoReadsScript), "--workspace", twoFileWorkspace(t), "read both")
	if code != ExitUsage || !strings.Contains(stderr, "http/protobuf") {
		t.Errorf("grpc: exit %d, stderr %q", code, stderr)
	}
}

func TestTraceOfAStoredThread(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	script := writeScript(t, `rounds:
  - calls:
      - {name: read_file, args: {path: a.txt}}
  - text: it says alpha
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--model", "scripted:"+script, "--workspace", dir, "read a.txt")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var out struct {
		ThreadID string `json:"thread_id"`
		TurnID   string `json:"turn_id"`
	}
	json.Unmarshal([]byte(lines[len(lines)-1]), &out)
	page := filepath.Join(dir, "trace.html")
	code, _, stderr = runMain(t, context.Background(), "trace", out.ThreadID, "--db", db, "--html", page)
	if code != ExitCompleted {
		t.Fatalf("trace: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{out.TurnID, "read_file", "it says alpha"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if code, _, _ := runMain(t, context.Background(), "trace", "thread_nope", "--db", db, "--html", page); code != ExitUsage {
		t.Errorf("an unknown thread: exit %d, want 2", code)
	}
	if code, _, _ := runMain(t, context.Background(), "trace", out.ThreadID, "--events", "x", "--html", page); code != ExitUsage {
		t.Errorf("a thread and --events: exit %d, want 2", code)
	}
}
