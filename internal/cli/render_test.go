package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// renderGolden renders events (their times t0 + the offsets given) and the
// outcome with the human renderer, and compares with testdata/name.
func renderGolden(t *testing.T, name string, color bool, evs []event.Event, out *loop.Outcome) {
	t.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	h := newHuman(&b, color)
	h.start = t0
	h.now = func() time.Time { return t0.Add(9 * time.Second) }
	for _, e := range evs {
		e.Time = t0.Add(time.Duration(e.Duration * float64(time.Millisecond)))
		if e.Type != event.Result {
			e.Duration = 0
		} else {
			e.Duration = 12
		}
		h.Handle(e)
	}
	if out != nil {
		h.summary(out)
	}
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/cli -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("rein run's output changed (run with -update if meant)\ngot:\n%s\nwant:\n%s", b.Bytes(), want)
	}
}

// at is an event at ms milliseconds into the turn (carried in Duration
// until renderGolden sets the time).
func at(ms float64, e event.Event) event.Event { e.Duration = ms; return e }

func TestRenderReasoningStreamsMarkedThenSaysHowLong(t *testing.T) {
	evs := []event.Event{
		at(0, event.Event{Type: event.RoundStarted, Round: 1}),
		at(100, event.Event{Type: event.ThinkingDelta, Delta: "The user wants the tests"}),
		at(200, event.Event{Type: event.ThinkingDelta, Delta: " fixed.\nFirst I read"}),
		at(300, event.Event{Type: event.ThinkingDelta, Delta: " the failing test.\n"}),
		at(2400, event.Event{Type: event.TextDelta, Delta: "Reading the test first.\n"}),
		at(2500, event.Event{Type: event.RoundCompleted, Round: 1}),
	}
	out := &loop.Outcome{Status: loop.StatusCompleted, StopReason: loop.StopFinished, Rounds: 1}
	renderGolden(t, "render_reasoning.txt", false, evs, out)
	renderGolden(t, "render_reasoning_color.txt", true, evs, nil)
}

func TestRenderExecOutputStreamsWhileTheCommandRuns(t *testing.T) {
	evs := []event.Event{
		at(0, event.Event{Type: event.RoundStarted, Round: 1}),
		at(10, event.Event{Type: event.ToolStarted, CallID: "c1", Name: "exec", Args: `{"command":"go test ./..."}`}),
		at(500, event.Event{Type: event.ToolOutput, CallID: "c1", Name: "exec", Delta: "ok  \tpkg/a\t0.1s\n"}),
		at(900, event.Event{Type: event.ToolOutput, CallID: "c1", Name: "exec", Delta: "--- FAIL: TestB (0.00s)\n    b_test.go:9: got 1\n"}),
		at(1000, event.Event{Type: event.ToolOutput, CallID: "c1", Name: "exec", Delta: "FAIL"}),
		at(1100, event.Event{Type: event.Result, CallID: "c1", Name: "exec", Status: "ok", Content: "exit 1\nok pkg/a\nFAIL"}),
		at(1200, event.Event{Type: event.RoundCompleted, Round: 1}),
	}
	renderGolden(t, "render_exec.txt", false, evs, nil)
}

func TestRenderPausedApprovalSaysSoWithArgumentsAndTheFlags(t *testing.T) {
	args := `{"command":"rm -rf build && make","timeout_seconds":60}`
	p := &tool.Pause{Kind: tool.PauseApproval}
	evs := []event.Event{
		at(0, event.Event{Type: event.RoundStarted, Round: 1}),
		at(10, event.Event{Type: event.ToolStarted, CallID: "c1", Name: "exec", Args: args}),
		at(20, event.Event{Type: event.Result, CallID: "c1", Name: "exec", Status: string(llm.ResultPending), Content: "exec waits for the user's approval"}),
		at(30, event.Event{Type: event.PauseRequested, ThreadID: "thread_t1", CallID: "c1", Name: "exec", Args: args, Pause: p}),
	}
	out := &loop.Outcome{ThreadID: "thread_t1", TurnID: "turn_1", Status: loop.StatusPaused, StopReason: loop.StopAwaitingUser, Rounds: 1, ToolSteps: 1,
		Pause: &loop.Pause{TurnID: "turn_1", CallID: "c1", Tool: "exec", Kind: tool.PauseApproval, Args: args}}
	renderGolden(t, "render_approval.txt", false, evs, out)
}

func TestStatusLineShowsElapsedBetweenOutputsOnly(t *testing.T) {
	var b bytes.Buffer
	h := newHuman(&b, true)
	t0 := time.Now()
	h.start = t0
	h.now = func() time.Time { return t0.Add(12 * time.Second) }
	h.drawStatus()
	h.Handle(event.Event{Type: event.TextDelta, Delta: "hi"})
	h.drawStatus() // mid-line: the answer streams, no status
	h.Handle(event.Event{Type: event.TextDelta, Delta: "\n"})
	h.Handle(event.Event{Type: event.PauseRequested, Pause: &tool.Pause{Kind: tool.PauseAskUser}})
	h.drawStatus() // the user is asked: no status under the question
	want := "\r\x1b[K\x1b[2mworking 12s · ctrl-c to interrupt\x1b[0m\r\x1b[Khi\n\n"
	if got := b.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// rein run prints a file edit's diff under its call: edit_file's from its
// result, write_file's over a file it replaced from the result's Meta (the
// model's text has none), cut after runDiffLines lines, control characters
// made visible, once per call.
func TestRenderFileEditsShowTheirDiff(t *testing.T) {
	wa := `{"path":"conf.txt","content":"port = 8080\nhost = a\n"}`
	meta, _ := json.Marshal(map[string]string{"diff": "--- a/conf.txt\n+++ b/conf.txt\n@@ -1,2 +1,2 @@\n-port = 80\n+port = 8080\n host = a\x1b[2J\n"})
	wr := llm.Result{CallID: "c1", Name: "write_file", Status: llm.ResultOK, Content: "replaced conf.txt (was 20 bytes; now 2 lines, 22 bytes)", Meta: meta}
	var long strings.Builder
	long.WriteString("edited big.txt: replaced 1 occurrence at line 1\n--- a/big.txt\n+++ b/big.txt\n@@ -1,30 +1,30 @@\n")
	for i := range 30 {
		fmt.Fprintf(&long, "-old %d\n+new %d\n", i, i)
	}
	ed := llm.Result{CallID: "c2", Name: "edit_file", Status: llm.ResultOK, Content: long.String()}
	item := func(r *llm.Result) *llm.Item {
		return &llm.Item{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: r}}}
	}
	evs := []event.Event{
		at(0, event.Event{Type: event.RoundStarted, Round: 1}),
		at(10, event.Event{Type: event.ToolStarted, CallID: "c1", Name: "write_file", Args: wa}),
		at(20, event.Event{Type: event.Result, CallID: "c1", Name: "write_file", Status: "ok", Content: wr.Content}),
		at(30, event.Event{Type: event.ToolStarted, CallID: "c2", Name: "edit_file", Args: `{"path":"big.txt","old_string":"old","new_string":"new"}`}),
		at(40, event.Event{Type: event.Result, CallID: "c2", Name: "edit_file", Status: "ok", Content: ed.Content}),
		at(50, event.Event{Type: event.ItemAdded, Item: item(&wr)}),
		at(50, event.Event{Type: event.ItemAdded, Item: item(&ed)}),
		at(60, event.Event{Type: event.ItemAdded, Item: item(&wr)}),
		at(70, event.Event{Type: event.RoundCompleted, Round: 1}),
	}
	renderGolden(t, "render_diff.txt", false, evs, nil)
	renderGolden(t, "render_diff_color.txt", true, evs, nil)
}

// TestRenderShowsHiddenCharactersVisibly: what a hostile file, tool or
// model writes reaches rein run's output with its escape sequences,
// controls, bidi overrides and isolates and zero-width characters shown as
// marks (termtext.Visible) — in a diff, a command's live output, a call's
// arguments (also where JSON escaped them), a result, the streamed answer,
// a sub-agent's call, and an approval box and its summary — so a diff
// cannot read differently from what it does. Before, only diffs had their
// controls replaced, and bidi characters passed everywhere.
func TestRenderShowsHiddenCharactersVisibly(t *testing.T) {
	const rlo = "\u202e"
	meta, _ := json.Marshal(map[string]string{"diff": "--- a/auth.go\n+++ b/auth.go\n@@ -1 +1 @@\n-if isAdmin {\n+if isAdmin " + rlo + "} \u2066// only admins\u2069 {\n"})
	wr := llm.Result{CallID: "c1", Name: "write_file", Status: llm.ResultOK, Content: "replaced auth.go", Meta: meta}
	item := &llm.Item{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &wr}}}
	approve := `{"op":"add","scope":"user","text":"Run \u202emake\u200b deploy\u001b[2J"}`
	evs := []event.Event{
		at(0, event.Event{Type: event.RoundStarted, Round: 1}),
		at(5, event.Event{Type: event.TextDelta, Delta: "I fixed it " + rlo + "evil\x1b]0;title\x07 done\n"}),
		at(10, event.Event{Type: event.ToolStarted, CallID: "c1", Name: "write_file", Args: `{"path":"auth` + rlo + `og.exe","content":"x"}`}),
		at(20, event.Event{Type: event.Result, CallID: "c1", Name: "write_file", Status: "ok", Content: wr.Content + "\x1b[31m" + rlo}),
		at(25, event.Event{Type: event.ItemAdded, Item: item}),
		at(30, event.Event{Type: event.ToolStarted, CallID: "c2", Name: "exec", Args: `{"command":"cat notes"}`}),
		at(40, event.Event{Type: event.ToolOutput, CallID: "c2", Name: "exec", Delta: "line one\r\nline \ufefftwo " + rlo + "\x1b[2J\r\n"}),
		at(50, event.Event{Type: event.Result, CallID: "c2", Name: "exec", Status: "ok", Content: "exit 0"}),
		at(55, event.Event{Type: event.Subagent, Depth: 1, Sub: &event.Event{Type: event.Result, Name: "read_file", Status: "ok", Content: "x" + rlo + "y"}}),
		at(60, event.Event{Type: event.ToolStarted, CallID: "c3", Name: "write_memory", Args: approve}),
		at(70, event.Event{Type: event.PauseRequested, ThreadID: "thread_t1", CallID: "c3", Name: "write_memory", Args: approve,
			Pause: &tool.Pause{Kind: tool.PauseApproval, Intro: "This writes to your user memory, which is global."}}),
	}
	out := &loop.Outcome{ThreadID: "thread_t1", TurnID: "turn_1", Status: loop.StatusPaused, StopReason: loop.StopAwaitingUser, Rounds: 1, ToolSteps: 3,
		Pause: &loop.Pause{TurnID: "turn_1", CallID: "c3", Tool: "write_memory", Kind: tool.PauseApproval, Args: approve, Intro: "This writes to your user memory, which is global."}}
	renderGolden(t, "render_hidden.txt", false, evs, out)
	renderGolden(t, "render_hidden_color.txt", true, evs, nil)
	got, _ := os.ReadFile(filepath.Join("testdata", "render_hidden.txt"))
	for _, bad := range []string{rlo, "\u2066", "\u2069", "\u200b", "\ufeff", "\x1b", "\x07", "\r"} {
		if strings.Contains(string(got), bad) {
			t.Errorf("rein run's output holds %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"+if isAdmin <U+202E>} <U+2066>// only admins<U+2069> {", "auth<U+202E>og.exe", "read_file     0 ms  x<U+202E>y", "line <U+FEFF>two <U+202E><U+001B>[2J", "Run <U+202E>make<U+200B> deploy<U+001B>[2J", "I fixed it <U+202E>evil<U+001B>]0;title<U+0007> done"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("rein run's output lacks %q:\n%s", want, got)
		}
	}
}
