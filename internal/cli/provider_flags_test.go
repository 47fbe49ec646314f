package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
)

// TestRequestSettingFlags: --reasoning-effort and --parallel-tool-calls
// reach the request, over the config file's settings.
func TestRequestSettingFlags(t *testing.T) {
	clearKeys(t)
	srv := testkit.NewChatServer(t, testkit.Round{Text: "ok"})
	writeConfig(t, "[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \""+srv.BaseURL()+"\"\nreasoning_effort = \"high\"\n")
	code, _, stderr := runMain(t, context.Background(), "run", "--model", "local:m", "--workspace", t.TempDir(),
		"--reasoning-effort", "none", "--parallel-tool-calls=false", "hi")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var b map[string]any
	json.Unmarshal(reqs[0].Body, &b)
	if b["reasoning_effort"] != "none" || b["parallel_tool_calls"] != false {
		t.Errorf("reasoning_effort %v, parallel_tool_calls %v; want none and false", b["reasoning_effort"], b["parallel_tool_calls"])
	}

	code, _, stderr = runMain(t, context.Background(), "run", "--model", "local:m", "--workspace", t.TempDir(), "--reasoning-effort", "extreme", "hi")
	if code != ExitUsage || !strings.Contains(stderr, `reasoning_effort "extreme": use one of none`) {
		t.Errorf("a bad effort: exit %d, stderr %q", code, stderr)
	}
}

// TestRefusedToolsWarn: a server that refuses tool definitions in its own
// words gets the turn in text tool mode, and the user is told.
func TestRefusedToolsWarn(t *testing.T) {
	clearKeys(t)
	srv := testkit.NewChatServer(t, testkit.Round{Fault: testkit.FaultToolsRefusedInProse}, testkit.Round{Text: "done in text mode"})
	writeConfig(t, "[providers.ollama]\nprotocol = \"openai-chat\"\nbase_url = \""+srv.BaseURL()+"\"\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "ollama:warned-model", "--workspace", t.TempDir(), "hi")
	if code != 0 || !strings.Contains(stdout, "done in text mode") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "rein: warning: ollama:warned-model refused tool definitions") || !strings.Contains(stderr, `tool_mode = "text"`) {
		t.Errorf("stderr %q: want the switch to text tool mode named", stderr)
	}
}
