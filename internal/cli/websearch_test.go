package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
)

// searxngMock answers like a SearXNG instance with the JSON format on.
func searxngMock(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"query":"q","results":[{"url":"https://go.dev/blog/context","title":"Go Concurrency Patterns: <b>Context</b>","content":"Each request runs in its own goroutine.","engine":"ddg","score":1}],"answers":[],"suggestions":[]}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestToolsOffersWebSearchWithAConfiguredBackend(t *testing.T) {
	clearKeys(t)
	if in, _, _ := toolsJSON(t).decision("web_search"); in {
		t.Error("web_search without a backend")
	}

	writeConfig(t, "[web_search]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:9\"\n")
	r := toolsJSON(t)
	if in, reason, _ := r.decision("web_search"); !in || reason != "a search backend is configured (searxng)" {
		t.Errorf("web_search: in %v, %q", in, reason)
	}
	if r.Mounted[0] != "web_search" {
		t.Errorf("web_search is not first (step 1): %v", r.Mounted)
	}
	if in, reason, _ := toolsJSON(t, "--no-tool", "web_search").decision("web_search"); in || !strings.HasPrefix(reason, "suppressed") {
		t.Errorf("--no-tool web_search: in %v, %q", in, reason)
	}

	writeConfig(t, "[web_search]\nbackend = \"brave\"\n")
	if in, reason, _ := toolsJSON(t).decision("web_search"); in || !strings.Contains(reason, "set BRAVE_API_KEY") {
		t.Errorf("brave without a key: in %v, %q", in, reason)
	}
	t.Setenv("BRAVE_API_KEY", "k")
	if in, reason, _ := toolsJSON(t).decision("web_search"); !in || !strings.Contains(reason, "(brave)") {
		t.Errorf("brave with a key: in %v, %q", in, reason)
	}
}

// TestRunSearchesThroughTheConfiguredBackend runs a turn whose model calls
// web_search, answered by a SearXNG mock.
func TestRunSearchesThroughTheConfiguredBackend(t *testing.T) {
	clearKeys(t)
	srv, hits := searxngMock(t)
	writeConfig(t, "[web_search]\nbackend = \"searxng\"\nurl = \""+srv.URL+"\"\n")
	script := writeScript(t, `rounds:
  - calls:
      - {name: web_search, args: {query: go context, max_results: 3}}
  - text: found it
    expect:
      - result: {tool: web_search, contains: "1. Go Concurrency Patterns: Context\n   https://go.dev/blog/context"}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+script, "--workspace", t.TempDir(), "search")
	if code != ExitCompleted || !strings.Contains(stdout, "found it") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if hits.Load() != 1 {
		t.Errorf("the backend got %d requests", hits.Load())
	}
}

func TestDoctorSaysWhichSearchBackendAnswers(t *testing.T) {
	clearKeys(t)
	srv, _ := searxngMock(t)
	writeConfig(t, "[web_search]\nbackend = \"searxng\"\nurl = \""+srv.URL+"\"\n")
	_, stdout, _ := runMain(t, context.Background(), "doctor")
	if line := doctorLine(stdout, "web_search"); !strings.Contains(line, "searxng answers") || !strings.Contains(line, "found 1 results") {
		t.Errorf("doctor's web_search line %q:\n%s", line, stdout)
	}

	writeConfig(t, "[web_search]\nbackend = \"searxng\"\nurl = \""+srv.URL+"/nojson\"\n")
	_, stdout, _ = runMain(t, context.Background(), "doctor")
	if line := doctorLine(stdout, "web_search"); !strings.Contains(line, "searxng does not answer") || !strings.Contains(line, "HTTP 403") {
		t.Errorf("doctor's web_search line %q", line)
	}

	writeConfig(t, "[web_search]\nbackend = \"tavily\"\n")
	_, stdout, _ = runMain(t, context.Background(), "doctor")
	if line := doctorLine(stdout, "web_search"); !strings.Contains(line, "off") || !strings.Contains(line, "TAVILY_API_KEY") {
		t.Errorf("doctor's web_search line %q", line)
	}
}

// TestRunOffersTheProvidersOwnSearch runs a turn on a model whose provider
// has its own search, answered with the TestAnthropicWebSearch recording:
// web_search goes as Anthropic's server tool, not as a function, even with
// a [web_search] backend configured, which is not asked; --no-tool
// web_search removes it.
func TestRunOffersTheProvidersOwnSearch(t *testing.T) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("recorded traffic (../shared/testdata/recorded) is absent")
	}
	rec, err := testkit.LoadRecording(filepath.Join(root, "fantasy", "providertests", "testdata", "TestAnthropicWebSearch", "generate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, noTool := range []bool{false, true} {
		clearKeys(t)
		t.Setenv("REC_KEY", "k")
		rp := testkit.NewReplayer(rec)
		defer rp.Close()
		searx, hits := searxngMock(t)
		writeConfig(t, "[providers.rec]\nprotocol = \"anthropic\"\nbase_url = \""+rp.URL+"\"\nkey_env = \"REC_KEY\"\n"+
			"[providers.rec.capabilities]\nweb_search = true\n"+
			"[web_search]\nbackend = \"searxng\"\nurl = \""+searx.URL+"\"\n")
		args := []string{"run", "--no-stream", "--model", "rec:claude-sonnet-4-5", "--workspace", t.TempDir(), "What is the population of Tokyo?"}
		if noTool {
			args = append(args, "--no-tool", "web_search")
		}
		code, stdout, stderr := runMain(t, context.Background(), args...)
		if code != ExitCompleted || strings.TrimSpace(stdout) == "" {
			t.Fatalf("--no-tool %v: exit %d\nstdout %s\nstderr %s", noTool, code, stdout, stderr)
		}
		var sent struct {
			Tools []map[string]any `json:"tools"`
		}
		if err := json.Unmarshal(rp.Requests()[0], &sent); err != nil {
			t.Fatal(err)
		}
		var search []map[string]any
		for _, tl := range sent.Tools {
			if tl["name"] == "web_search" {
				search = append(search, tl)
			}
		}
		switch {
		case noTool && len(search) != 0:
			t.Errorf("--no-tool web_search, yet sent %v", search)
		case !noTool && (len(search) != 1 || search[0]["type"] != "web_search_20250305" || search[0]["input_schema"] != nil):
			t.Errorf("web_search sent as %v, want Anthropic's server tool", search)
		}
		if hits.Load() != 0 {
			t.Error("the configured backend was asked, though the model has its own search")
		}
	}
}
