package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/session"
)

// TestForceToolReachesEveryDoor: --force-tool mounts a tool the
// capability leaves out in run's composition (rein tools shows it
// "forced"), and a thread started with forceTools gets it in serve
// (list_notebook, whose gate is off without a notebook; exec is offered to
// serve threads by default now, so forcing it shows nothing).
func TestForceToolReachesEveryDoor(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	code, stdout, stderr := runMain(t, context.Background(), "tools", "--workspace", dir, "--capability", "none", "--force-tool", "read_file")
	if code != ExitCompleted {
		t.Fatalf("tools: exit %d, stderr %s", code, stderr)
	}
	in, _, _ := strings.Cut(stdout, "out:")
	if !strings.Contains(in, "read_file") || !strings.Contains(in, "forced") || strings.Contains(in, "write_file") {
		t.Errorf("rein tools --capability none --force-tool read_file does not list read_file alone in, forced:\n%s", stdout)
	}

	script := writeScript(t, "rounds:\n  - text: hi\n")
	st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request"}, dir: dir, logw: io.Discard, st: st}
	defer b.close()
	for _, tc := range []struct {
		id     string
		forced []string
		want   bool
	}{
		{"thread_plain", nil, false},
		{"thread_forced", []string{"list_notebook"}, true},
	} {
		o, release, err := b.setup(t.Context(), session.Thread{ID: tc.id, Settings: session.ThreadConfig{ForceTools: tc.forced}})
		if err != nil {
			t.Fatal(err)
		}
		if release != nil {
			release()
		}
		if _, ok := o.Tools.Get("list_notebook"); ok != tc.want {
			t.Errorf("%s: list_notebook mounted %v, want %v", tc.id, ok, tc.want)
		}
	}
}

// TestToolsForAModel: rein tools --model composes what that model would
// be offered: a model with its own web search gets web_search, one without
// does not (no backend configured), and a provider in text tool mode says
// so; no key is needed.
func TestToolsForAModel(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	cfgDir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\ntool_mode = \"text\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model     string
		search    bool
		toolMode  string
		ownSearch bool
	}{
		{"openai:gpt-5", true, "native", true},
		{"anthropic:claude-sonnet-4-5", true, "native", true},
		{"deepseek:deepseek-chat", false, "native", false},
		{"local:qwen3", false, "text", false},
	} {
		code, stdout, stderr := runMain(t, context.Background(), "tools", "--workspace", dir, "--model", tc.model, "--json")
		if code != ExitCompleted {
			t.Fatalf("%s: exit %d, %s", tc.model, code, stderr)
		}
		var rep struct {
			Mounted []string `json:"mounted"`
			Model   struct {
				Model     string `json:"model"`
				ToolMode  string `json:"tool_mode"`
				OwnSearch bool   `json:"own_search"`
			} `json:"model"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", tc.model, err, stdout)
		}
		if slices.Contains(rep.Mounted, "web_search") != tc.search || rep.Model.Model != tc.model || rep.Model.ToolMode != tc.toolMode || rep.Model.OwnSearch != tc.ownSearch {
			t.Errorf("%s: mounted %v, model %+v; want web_search %v, tool mode %s, own search %v", tc.model, rep.Mounted, rep.Model, tc.search, tc.toolMode, tc.ownSearch)
		}
	}
	if code, _, stderr := runMain(t, context.Background(), "tools", "--workspace", dir, "--model", "nonsense"); code != ExitUsage || !strings.Contains(stderr, "--model") {
		t.Errorf("a bad spec: exit %d, %s", code, stderr)
	}
}
