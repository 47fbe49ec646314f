package cli

import (
	"context"
	"encoding/json"
	"github.com/reinhq/rein/record"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/store"
)

func decodeReport(t *testing.T, stdout string) *event.ContextReport {
	t.Helper()
	var r event.ContextReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("not a report: %v\n%s", err, stdout)
	}
	n := 0
	for _, s := range r.Segments {
		n += s.Tokens
	}
	if n != r.Total {
		t.Errorf("segments add up to %d, total %d", n, r.Total)
	}
	return &r
}

func TestContextCountsAHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.json")
	f := map[string]any{
		"system": "You are rein.",
		"tools":  []llm.ToolSpec{{Name: "read_file", Description: "Read a file", Schema: json.RawMessage(`{"type":"object"}`)}},
		"items": []llm.Item{
			llm.UserText("What is in main.go?"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "c1", Name: "read_file", Args: `{"path":"main.go"}`}}}},
			llm.ToolResult(llm.Result{CallID: "c1", Name: "read_file", Content: strings.Repeat("package main\n", 100)}),
			llm.Directive("an earlier turn's directive, not sent again"),
		},
	}
	b, _ := json.Marshal(f)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, context.Background(), "context", "--history", path, "--model", "openai:gpt-5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decodeReport(t, stdout)
	if r.Window != 400_000 || r.Counter != "o200k_base" || r.Estimated || r.Model != "openai:gpt-5" {
		t.Errorf("window %d counter %s estimated %v model %s", r.Window, r.Counter, r.Estimated, r.Model)
	}
	seg := map[string]int{}
	for _, s := range r.Segments {
		seg[s.Name] = s.Tokens
	}
	if seg["tool_results"] < 300 || seg["tools"] == 0 || seg["system"] == 0 || seg["history"] == 0 {
		t.Errorf("segments %v", seg)
	}

	code, stdout, _ = runMain(t, context.Background(), "context", "--history", path, "--model", "openai:gpt-5")
	if code != 0 || !strings.Contains(stdout, "tool_results") || !strings.Contains(stdout, "of 400,000") {
		t.Errorf("exit %d, human report:\n%s", code, stdout)
	}
}

func TestContextCountsAStoredThreadFromItsLatestCompaction(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "rein.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	th, err := st.CreateThread(ctx, record.Thread{Title: "t", Settings: record.Settings{Model: "anthropic:claude-sonnet-4-5"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveTurn(ctx, record.Turn{ID: "turn_1", ThreadID: th.ID, Seq: 1, Status: loop.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	items := []llm.Item{
		llm.UserText(strings.Repeat("an old long message ", 5_000)),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "ok"}}},
		{Role: llm.RoleUser, Origin: loop.OriginCompaction, Parts: []llm.Part{{Kind: llm.PartText, Text: "summary of the work"}}},
		llm.UserText("and now?"),
	}
	for _, it := range items {
		it.TurnID = "turn_1"
		if _, err := st.AppendItem(ctx, th.ID, it); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, stdout, stderr := runMain(t, ctx, "context", th.ID, "--db", db, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decodeReport(t, stdout)
	if r.Model != "anthropic:claude-sonnet-4-5" || r.Window != 200_000 || !r.Estimated {
		t.Errorf("model %s window %d estimated %v: want the thread's model, counted with a borrowed tokenizer", r.Model, r.Window, r.Estimated)
	}
	if r.Input > 200 {
		t.Errorf("input %d tokens: the history before the compaction was counted", r.Input)
	}

	if code, _, stderr := runMain(t, ctx, "context", "thread_nope", "--db", db); code != ExitUsage || !strings.Contains(stderr, "no thread") {
		t.Errorf("unknown thread: exit %d, %s", code, stderr)
	}
}

func TestContextUsage(t *testing.T) {
	for _, args := range [][]string{{"context"}, {"context", "th", "--history", "h.json"}, {"context", "--history", "/nonexistent.json"}} {
		if code, _, stderr := runMain(t, context.Background(), args...); code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
