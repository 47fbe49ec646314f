package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
)

// TestServeTakesTheRequestSettingsRunTakes: rein serve sets what rein run
// sets by flag for each request and turn — reasoning effort, parallel
// calls, whole responses, the output cap — for every thread's turns.
func TestServeTakesTheRequestSettingsRunTakes(t *testing.T) {
	clearKeys(t)
	t.Setenv("OPENAI_API_KEY", "k")
	dir := t.TempDir()
	srv := testkit.NewChatServer(t, testkit.Round{Text: "hi"})
	c, in, done := startServeStdio(t, "--model", "openai-chat:gpt-5", "--base-url", srv.BaseURL(),
		"--db", filepath.Join(dir, "rein.db"), "--workspace", dir,
		"--reasoning-effort", "low", "--parallel-tool-calls=false", "--no-stream", "--max-output", "77", "--timeout", "5m")
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "hello"}}})
	got := c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })["params"].(map[string]any)["turn"].(map[string]any)
	if got["status"] != "completed" {
		t.Fatalf("turn %v", got)
	}
	in.Close()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["reasoning_effort"] != "low" || body["parallel_tool_calls"] != false || body["max_completion_tokens"] != 77.0 || reqs[0].Stream {
		t.Errorf("request reasoning_effort %v, parallel_tool_calls %v, max_completion_tokens %v, stream %v; want low, false, 77, no stream",
			body["reasoning_effort"], body["parallel_tool_calls"], body["max_completion_tokens"], reqs[0].Stream)
	}
	if code, _, stderr := runMain(t, context.Background(), "serve", "--stdio", "--max-output", "-1"); code != ExitUsage || !strings.Contains(stderr, "--max-output") {
		t.Errorf("a negative --max-output: exit %d, %s", code, stderr)
	}
}
