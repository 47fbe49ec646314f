package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/cli -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed: it is what --json prints; if the change is meant, update docs/protocol.md and README and run with -update\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestSnakeKeys(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"threadId":"a","stopReason":"finished"}`, `{"thread_id":"a","stop_reason":"finished"}`},
		// Order kept; values, even camelCase ones, untouched.
		{`{"z":1,"a":"inProgress","cachedInputTokens":2}`, `{"z":1,"a":"inProgress","cached_input_tokens":2}`},
		// Nested objects and arrays; keys already in snake_case stay.
		{`{"turns":[{"toolSteps":1,"usage":{"inputTokens":3}},{}],"items":[{"turn_id":"t","parts":[]}]}`,
			`{"turns":[{"tool_steps":1,"usage":{"input_tokens":3}},{}],"items":[{"turn_id":"t","parts":[]}]}`},
		{`[1,true,false,null,"x<y&z",1.5e3]`, `[1,true,false,null,"x<y&z",1.5e3]`},
		{`{"a":{"b":{"cD":[[{"eF":null}]]}}}`, `{"a":{"b":{"c_d":[[{"e_f":null}]]}}}`},
	} {
		got, err := snakeKeys([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("snakeKeys(%s) = %s, %v\nwant %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := snakeKeys([]byte(`{"a":`)); err == nil {
		t.Error("snakeKeys of cut JSON: no error")
	}
}

// golden records, the same as protocol's golden test uses.
func goldenRecords() (record.Thread, []record.Turn, []llm.Item) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := record.Thread{ID: "thread_a", Title: "fix the flag parser", Created: at, Updated: at.Add(time.Minute), Turns: 2,
		Settings: record.Settings{Workspace: "/w", Model: "openai:gpt-5", Instructions: "be brief", EnableTools: []string{"exec"},
			Approval: "on-request", Sandbox: "workspace-write", MaxRounds: 8, Approved: []string{"exec"}}}
	turns := []record.Turn{
		{ID: "turn_1", ThreadID: "thread_a", Seq: 1, Status: record.StatusCompleted, StopReason: record.StopFinished, Answer: "done",
			Usage: llm.Usage{InputTokens: 1710, OutputTokens: 95, CachedInputTokens: 1024}, Cost: 0.01, Rounds: 2, ToolSteps: 1},
		{ID: "turn_2", ThreadID: "thread_a", Seq: 2, Status: record.StatusRunning},
	}
	items := []llm.Item{
		{ID: "turn_1.1", TurnID: "turn_1", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "fix it"}}},
		{ID: "turn_1.2", TurnID: "turn_1", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "c1", Name: "exec", Args: `{"cmd":"ls"}`}}}},
	}
	return th, turns, items
}

// rein sessions list --json and show --json: thread/list's and the
// thread's fields as the server has them, in snake_case.
func TestSessionsJSONSpelling(t *testing.T) {
	th, turns, items := goldenRecords()
	var b bytes.Buffer
	if err := encodeSnake(&b, protocol.ThreadListResult{Threads: []protocol.Thread{protocol.ThreadOf(th)}, NextCursor: "123/thread_a"}); err != nil {
		t.Fatal(err)
	}
	if err := encodeSnake(&b, protocol.ExportOf(th, turns, items)); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "sessions.jsonl", b.Bytes())
}

// The last line of rein run --json (DESIGN §13).
func TestOutcomeLineSpelling(t *testing.T) {
	var b bytes.Buffer
	j := newJSONLines(&b)
	j.outcome(&loop.Outcome{ThreadID: "thread_a", TurnID: "turn_1", Status: loop.StatusCompleted, StopReason: loop.StopFinished,
		Answer: "done", Rounds: 2, ToolSteps: 1, Usage: llm.Usage{InputTokens: 1710, OutputTokens: 95}, Cost: 0.01})
	j.outcome(&loop.Outcome{ThreadID: "thread_a", TurnID: "turn_2", Status: loop.StatusPaused, StopReason: loop.StopAwaitingUser,
		Pause: &loop.Pause{ThreadID: "thread_a", TurnID: "turn_2", CallID: "c2", Tool: "exec", Kind: tool.PauseApproval, Args: `{"cmd":"rm x"}`}})
	j.outcome(&loop.Outcome{ThreadID: "thread_a", TurnID: "turn_3", Status: loop.StatusFailed, StopReason: loop.StopProviderError,
		Err: errors.New("model: 500")})
	goldenFile(t, "outcome.jsonl", b.Bytes())
}
