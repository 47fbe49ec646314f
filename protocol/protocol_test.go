package protocol_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// A Go client imports the wire types without the server's machinery: no
// SQLite, no session runtime, no store, no engine (issue 12 §4).
func TestImportsStaySmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/reinhq/rein/protocol").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, bad := range []string{"modernc.org/sqlite", "github.com/reinhq/rein/session", "github.com/reinhq/rein/store",
			"github.com/reinhq/rein/loop", "github.com/reinhq/rein/server", "github.com/coder/websocket"} {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				t.Errorf("protocol depends on %s", p)
			}
		}
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./protocol -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed: the wire form is the protocol; if the change is meant, update docs/protocol.md and run with -update\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// The records on the wire: camelCase fields, a running turn inProgress,
// the stored fields a client has no use for (seq, input, state) left out.
func TestRecordsOnTheWire(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := record.Thread{ID: "thread_a", Title: "fix the flag parser", Created: at, Updated: at.Add(time.Minute), Turns: 2,
		Settings: record.Settings{Workspace: "/w", Model: "openai:gpt-5", Instructions: "be brief", EnableTools: []string{"exec"},
			Approval: "on-request", Sandbox: "workspace-write", MaxRounds: 8, Approved: []string{"exec"}}}
	usage := llm.Usage{InputTokens: 1710, OutputTokens: 95, CachedInputTokens: 1024}
	turns := []record.Turn{
		{ID: "turn_1", ThreadID: "thread_a", Seq: 1, Status: record.StatusCompleted, StopReason: record.StopFinished, Answer: "done",
			Usage: usage, Cost: 0.01, Rounds: 2, ToolSteps: 1, Started: at, Ended: at.Add(time.Second)},
		{ID: "turn_2", ThreadID: "thread_a", Seq: 2, Status: record.StatusRunning, Started: at, Input: []llm.Item{llm.UserText("more")},
			State: json.RawMessage(`{"version":1}`)},
		{ID: "turn_3", ThreadID: "thread_a", Seq: 3, Status: record.StatusPaused, StopReason: record.StopAwaitingUser,
			Pause: &record.Pause{TurnID: "turn_3", CallID: "c1", Tool: "ask_user", Kind: tool.PauseAskUser}},
	}
	items := []llm.Item{{ID: "turn_1.1", TurnID: "turn_1", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "fix it"}}}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	for _, v := range []any{
		protocol.ThreadOf(th),
		protocol.TurnOf(&turns[0]), protocol.TurnOf(&turns[1]), protocol.TurnOf(&turns[2]),
		protocol.ReadOf(th, turns[:1], items),
		protocol.ExportOf(th, turns[:1], items),
	} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "records.json", b.Bytes())
}

func TestStatusOf(t *testing.T) {
	for s, want := range map[record.Status]string{
		record.StatusRunning: "inProgress", record.StatusQueued: "queued", record.StatusPaused: "paused",
		record.StatusCompleted: "completed", record.StatusInterrupted: "interrupted", record.StatusFailed: "failed",
	} {
		if got := protocol.StatusOf(s); got != want {
			t.Errorf("StatusOf(%q) = %q, want %q", s, got, want)
		}
	}
}
