package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
)

// TestContextOfAThreadCountsThePromptItSent: after a turn, rein context
// THREAD counts the system prompt and the tool definitions as the turn's
// last request sent them (they are not stored with the items), where it
// used to report them as zero.
func TestContextOfAThreadCountsThePromptItSent(t *testing.T) {
	clearKeys(t)
	t.Setenv("OPENAI_API_KEY", "k")
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	srv := testkit.NewChatServer(t, testkit.Round{Text: "hi", InputTokens: 3_000, OutputTokens: 2})
	system := strings.Repeat("Answer in the voice of a careful engineer. ", 50)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--model", "openai-chat:gpt-5", "--base-url", srv.BaseURL(),
		"--db", db, "--workspace", dir, "--system", system, "hello")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var outcome struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &outcome); err != nil || outcome.ThreadID == "" {
		t.Fatalf("no thread id in %q", lines[len(lines)-1])
	}

	code, stdout, stderr = runMain(t, context.Background(), "context", outcome.ThreadID, "--db", db, "--json")
	if code != 0 {
		t.Fatalf("context: exit %d, %s", code, stderr)
	}
	r := decodeReport(t, stdout)
	seg := map[string]int{}
	for _, s := range r.Segments {
		seg[s.Name] = s.Tokens
	}
	if seg["system"] < 300 || seg["tools"] < 300 {
		t.Errorf("segments %v: want the system prompt (%d bytes) and the workspace's tools counted", seg, len(system))
	}

	code, stdout, _ = runMain(t, context.Background(), "context", outcome.ThreadID, "--db", db)
	if code != 0 || strings.Contains(stdout, "not counted") {
		t.Errorf("human report (exit %d) says the prompt is not counted:\n%s", code, stdout)
	}
}
