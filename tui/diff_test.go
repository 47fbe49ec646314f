package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

// workspace opens a temporary workspace holding files.
func workspace(t *testing.T, files map[string]string) *sandbox.Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func args(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// approval shows an approval pause of the call.
func (c *chat) approval(name, args string) {
	c.running("turn_1")
	c.send(event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "w1", Name: name, Args: args},
		event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "w1", Name: name, Args: args, Pause: &tool.Pause{Kind: tool.PauseApproval}})
}

func TestApprovalBoxShowsAColouredDiff(t *testing.T) {
	ws := workspace(t, map[string]string{"notes.txt": "one\ntwo\nthree\n"})
	c := newChatWith(t, &fakeBackend{}, Options{Workspace: ws})
	c.approval("edit_file", args(t, map[string]any{"path": "notes.txt", "old_string": "two\n", "new_string": "TWO\n"}))
	v := c.view()
	for _, want := range []string{"approve? edit_file notes.txt", "--- a/notes.txt", "+++ b/notes.txt", "@@ -1,3 +1,3 @@", " one", "-two", "+TWO", " three", "[y] approve"} {
		if !strings.Contains(v, want) {
			t.Fatalf("approval box lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "old_string") || strings.Contains(v, `\n`) {
		t.Errorf("the approval box shows escaped JSON:\n%s", v)
	}
	raw := c.m.View().Content
	red, green := c.m.styles().del.Render("-two"), c.m.styles().add.Render("+TWO")
	if !strings.Contains(raw, red) || !strings.Contains(raw, green) {
		t.Errorf("the diff is not coloured:\n%q", raw)
	}
	// The file is untouched until the call is approved.
	if b, _ := ws.ReadFile("notes.txt"); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("the file changed: %q", b)
	}
}

func TestApprovalOfANewFileShowsItAdded(t *testing.T) {
	c := newChatWith(t, &fakeBackend{}, Options{Workspace: workspace(t, nil)})
	c.approval("write_file", args(t, map[string]any{"path": "hello.go", "content": "package main\n"}))
	v := c.view()
	for _, want := range []string{"--- /dev/null", "+++ b/hello.go", "+package main"} {
		if !strings.Contains(v, want) {
			t.Fatalf("approval box lacks %q:\n%s", want, v)
		}
	}
}

func TestApprovalWithoutAWorkspaceDiffsTheCallsText(t *testing.T) {
	c := newChat(t)
	c.approval("edit_file", args(t, map[string]any{"path": "x.go", "old_string": "a := 1", "new_string": "a := 2"}))
	if v := c.view(); !strings.Contains(v, "-a := 1") || !strings.Contains(v, "+a := 2") {
		t.Fatalf("approval box:\n%s", v)
	}
}

func TestALongDiffIsFoldedAndCtrlOExpandsIt(t *testing.T) {
	var content strings.Builder
	for i := range 60 {
		fmt.Fprintf(&content, "line %d\n", i)
	}
	c := newChatWith(t, &fakeBackend{}, Options{Workspace: workspace(t, nil)})
	c.approval("write_file", args(t, map[string]any{"path": "long.txt", "content": content.String()}))
	v := c.view()
	if !strings.Contains(v, "more lines · ctrl+o to expand") || strings.Contains(v, "+line 59") {
		t.Fatalf("the long diff is not folded:\n%s", v)
	}
	c.press(ctrl('o'))
	if v := c.view(); !strings.Contains(v, "+line 59") {
		t.Fatalf("Ctrl-O did not expand the diff:\n%s", v)
	}
	c.press(ctrl('o'))
	if v := c.view(); strings.Contains(v, "+line 59") {
		t.Fatalf("a second Ctrl-O did not fold it again:\n%s", v)
	}
}

func TestEditCardShowsItsDiffAfterTheCall(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	a := args(t, map[string]any{"path": "notes.txt", "old_string": "two", "new_string": "TWO"})
	result := "edited notes.txt: replaced 1 occurrence\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "e1", Name: "edit_file", Args: a},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "e1", Name: "edit_file", Status: "ok", Content: result, Duration: 4},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration})
	tr := c.transcript()
	for _, want := range []string{"✓ edit_file notes.txt", "    -two", "    +TWO"} {
		if !strings.Contains(tr, want) {
			t.Fatalf("the card lacks %q:\n%s", want, tr)
		}
	}
	if strings.Contains(tr, "old_string") {
		t.Errorf("the card shows the escaped arguments:\n%s", tr)
	}
	raw := strings.Join(c.m.transcript, "\n")
	if !strings.Contains(raw, c.m.styles().add.Render("+TWO")) {
		t.Errorf("the card's diff is not coloured")
	}
}

func TestAFoldedCardDiffIsPrintedWholeWithCtrlO(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	var content strings.Builder
	for i := range 30 {
		fmt.Fprintf(&content, "row %d\n", i)
	}
	a := args(t, map[string]any{"path": "new.txt", "content": content.String()})
	c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "w1", Name: "write_file", Args: a},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "w1", Name: "write_file", Status: "ok", Content: "created new.txt (30 lines, 150 bytes)", Duration: 4},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration})
	if tr := c.transcript(); !strings.Contains(tr, "+row 0") || strings.Contains(tr, "+row 29") || !strings.Contains(tr, "ctrl+o to expand") {
		t.Fatalf("the card's diff is not folded:\n%s", tr)
	}
	c.press(ctrl('o'))
	if tr := c.transcript(); !strings.Contains(tr, "+row 29") {
		t.Fatalf("Ctrl-O did not print the whole diff:\n%s", tr)
	}
}

func TestEscapeSequencesInADiffAreShownNotObeyed(t *testing.T) {
	c := newChat(t)
	c.approval("write_file", args(t, map[string]any{"path": "evil.txt", "content": "ok\x1b]52;c;cGF3bmVk\x07\x1b[2J\n"}))
	raw := c.m.View().Content
	if strings.Contains(raw, "\x1b]52") || strings.Contains(raw, "\x1b[2J") || strings.Contains(raw, "\x07") {
		t.Fatalf("the file's escape sequences reach the terminal: %q", raw)
	}
}

func TestAskUserAnswerHidesTheEnginesDirective(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.PauseResolved, TurnID: "turn_1", CallID: "a1", Name: "ask_user",
		Content: "User answered:\n- Which city?\n  -> Paris\n\n[ask_user resolved] Continue the user's original request with these answers; do not stop at an acknowledgement."})
	tr := c.transcript()
	if strings.Contains(tr, "[ask_user resolved]") || strings.Contains(tr, "Continue the user's original request") {
		t.Fatalf("the directive shows in the transcript:\n%s", tr)
	}
	if !strings.Contains(tr, "Paris") {
		t.Errorf("the answer is gone:\n%s", tr)
	}
}

func TestResumedThreadReplaysCardsMarkersAndCost(t *testing.T) {
	call := &llm.Call{ID: "c1", Name: "edit_file", Args: `{"path":"a.txt","old_string":"x","new_string":"y"}`}
	items := []llm.Item{
		llm.UserText("fix a.txt"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "Fixing it."}, {Kind: llm.PartCall, Call: call}}},
		llm.ToolResult(llm.Result{CallID: "c1", Name: "edit_file", Status: llm.ResultOK, Content: "edited a.txt: replaced 1 occurrence\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n"}),
		{Role: llm.RoleUser, Origin: llm.OriginDirective, Parts: []llm.Part{{Kind: llm.PartText, Text: "[rein] Your last reply contained no visible answer."}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "Done."}}},
		{Role: llm.RoleUser, Origin: llm.OriginMarker, Parts: []llm.Part{{Kind: llm.PartText, Text: "[rein] The previous turn was interrupted by the user after 2.0s."}}},
	}
	be := &fakeBackend{resumeInfo: &ThreadInfo{ID: "thread_old", Turns: 2, Usage: llm.Usage{InputTokens: 1500, OutputTokens: 500}, Cost: 0.25}, resumeItems: items}
	c := newChatWith(t, be, Options{Thread: "thread_old"})
	tr := c.transcript()
	for _, want := range []string{"› fix a.txt", "Fixing it.", "✓ edit_file a.txt", "    -x", "    +y", "Done.", "■ interrupted"} {
		if !strings.Contains(tr, want) {
			t.Fatalf("the replay lacks %q:\n%s", want, tr)
		}
	}
	if strings.Contains(tr, "[rein]") {
		t.Errorf("a directive shows in the replay:\n%s", tr)
	}
	if v := c.view(); !strings.Contains(v, "2.0k tokens · $0.2500") {
		t.Errorf("the footer lacks the thread's tokens and cost:\n%s", v)
	}
	c.typeText("/cost ")
	c.press(key(tea.KeyEnter))
	if tr := c.transcript(); !strings.Contains(tr, "input      1500 tokens") || !strings.Contains(tr, "cost       $0.2500") {
		t.Errorf("/cost:\n%s", tr)
	}
	// Quitting a resumed thread names it.
	if h := c.m.ResumeHint(); !strings.Contains(h, "rein chat --thread thread_old") {
		t.Errorf("resume hint = %q", h)
	}
}

func TestAtCompletesWorkspacePathsButNeverDeniedOnes(t *testing.T) {
	ws := workspace(t, map[string]string{"src/main.go": "package main\n", "src/util.go": "package main\n", ".env": "KEY=secret\n", ".git/config": "x"})
	c := newChatWith(t, &fakeBackend{}, Options{Workspace: ws})
	c.typeText("look at @mai")
	// The listing runs off the key's path; its result opens the menu.
	if !c.m.walking || c.m.menu != nil {
		t.Fatalf("typing @ did not start a listing (walking %v, menu %v)", c.m.walking, c.m.menu)
	}
	c.m.Update(walkedMsg{c.m.walk()})
	v := c.view()
	if !strings.Contains(v, "src/main.go") || strings.Contains(v, "src/util.go") {
		t.Fatalf("menu:\n%s", v)
	}
	c.press(key(tea.KeyTab))
	if got := c.m.input.Value(); got != "look at @src/main.go " {
		t.Fatalf("input after completion = %q", got)
	}
	c.m.input.Reset()
	c.typeText("@")
	v = c.view()
	if strings.Contains(v, ".env") || strings.Contains(v, ".git") {
		t.Fatalf("the menu lists a denied or version-control path:\n%s", v)
	}
	if !strings.Contains(v, "src/") {
		t.Fatalf("menu for a bare @:\n%s", v)
	}
}

func TestModelPickerSwitchesTheThreadsModel(t *testing.T) {
	var got []string
	opts := Options{Model: "openai:gpt-5", Models: []string{"openai:gpt-5", "anthropic:claude-sonnet-4-5", "deepseek:deepseek-chat"},
		SetModel: func(_ context.Context, thread, model string) error { got = append(got, thread+" "+model); return nil }}
	c := newChatWith(t, &fakeBackend{}, opts)
	c.typeText("/model ")
	c.press(key(tea.KeyEnter))
	v := c.view()
	if !strings.Contains(v, "anthropic:claude-sonnet-4-5") || !strings.Contains(v, "(current)") {
		t.Fatalf("no picker:\n%s", v)
	}
	c.press(key(tea.KeyDown))
	c.press(key(tea.KeyEnter))
	if len(got) != 1 || got[0] != "thread_1 anthropic:claude-sonnet-4-5" {
		t.Fatalf("SetModel calls = %q", got)
	}
	if v := c.view(); !strings.Contains(lastLine(v), "anthropic:claude-sonnet-4-5") {
		t.Errorf("the footer names the old model:\n%s", v)
	}
}

func TestSlashCommandsWithoutTheirHooksSaySo(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"/undo ", "/undo is not available yet"},
		{"/diff ", "/diff is not available"},
		{"/mcp ", "no MCP servers are configured"},
		{"/model ", "cannot switch models"},
	} {
		t.Run(tt.line, func(t *testing.T) {
			c := newChat(t)
			c.typeText(tt.line)
			c.press(key(tea.KeyEnter))
			if tr := c.transcript(); !strings.Contains(tr, tt.want) {
				t.Errorf("transcript lacks %q:\n%s", tt.want, tr)
			}
		})
	}
}

func TestUndoAndDiffCallTheirHooks(t *testing.T) {
	var undone []string
	opts := Options{
		Undo: func(_ context.Context, thread string, force bool) (string, error) {
			undone = append(undone, fmt.Sprint(thread, force))
			if !force {
				return "", fmt.Errorf("thread %s: %w: a.txt", thread, ErrChangedSince)
			}
			return "restored a.txt", nil
		},
		Changes: func(context.Context, string) (string, error) {
			return "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n", nil
		},
	}
	c := newChatWith(t, &fakeBackend{}, opts)
	c.typeText("/undo ")
	c.press(key(tea.KeyEnter))
	if tr := c.transcript(); !strings.Contains(tr, "files changed after the turn: a.txt") || !strings.Contains(tr, "/undo force restores over those files") || strings.Contains(tr, "↶") {
		t.Fatalf("an undo that met changed files:\n%s", tr)
	}
	c.typeText("/undo force")
	c.press(key(tea.KeyEnter))
	c.typeText("/diff ")
	c.press(key(tea.KeyEnter))
	tr := c.transcript()
	if strings.Join(undone, ",") != "thread_1false,thread_1true" || !strings.Contains(tr, "↶ restored a.txt") || !strings.Contains(tr, "+y") {
		t.Errorf("undo calls %q; transcript:\n%s", undone, tr)
	}
}

func TestInitStartsATurn(t *testing.T) {
	c := newChat(t)
	c.typeText("/init ")
	c.press(key(tea.KeyEnter))
	calls := c.be.log()
	if len(calls) != 2 || !strings.HasPrefix(calls[1], "start thread_1 Write an AGENTS.md") {
		t.Errorf("calls = %q", calls)
	}
}

func TestThreadsListsThisWorkspacesUnlessAll(t *testing.T) {
	be := &fakeBackend{}
	c := newChatWith(t, be, Options{Dir: "/work/here"})
	be.threads = append(be.threads, ThreadInfo{ID: "thread_here", Workspace: "/work/here"}, ThreadInfo{ID: "thread_there", Workspace: "/work/there"})
	c.typeText("/threads ")
	c.press(key(tea.KeyEnter))
	tr := c.transcript()
	if !strings.Contains(tr, "thread_here") || strings.Contains(tr, "thread_there") {
		t.Fatalf("/threads:\n%s", tr)
	}
	c.typeText("/threads all")
	c.press(key(tea.KeyEnter))
	if tr := c.transcript(); !strings.Contains(tr, "thread_there") {
		t.Fatalf("/threads all:\n%s", tr)
	}
}

func TestResumeTakesAUniquePrefix(t *testing.T) {
	be := &fakeBackend{threads: []ThreadInfo{{ID: "thread_abc123"}, {ID: "thread_abd999"}}}
	c := newChatWith(t, be, Options{})
	c.typeText("/resume abc")
	c.press(key(tea.KeyEnter))
	c.typeText("/resume ab")
	c.press(key(tea.KeyEnter))
	c.wantCalls("resume thread_abc123")
	if tr := c.transcript(); !strings.Contains(tr, "ab is the start of 2 threads") {
		t.Errorf("an ambiguous prefix:\n%s", tr)
	}
}

func TestChangesCollectsTheThreadsEdits(t *testing.T) {
	edit := &llm.Call{ID: "e1", Name: "edit_file", Args: `{"path":"a.txt"}`}
	write := &llm.Call{ID: "w1", Name: "write_file", Args: `{"path":"b.txt","content":"new\n"}`}
	failed := &llm.Call{ID: "f1", Name: "edit_file", Args: `{"path":"c.txt"}`}
	items := []llm.Item{
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: edit}, {Kind: llm.PartCall, Call: write}, {Kind: llm.PartCall, Call: failed}}},
		llm.ToolResult(llm.Result{CallID: "e1", Name: "edit_file", Status: llm.ResultOK, Content: "edited a.txt: x\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n"}),
		llm.ToolResult(llm.Result{CallID: "w1", Name: "write_file", Status: llm.ResultOK, Content: "created b.txt (1 lines, 4 bytes)"}),
		llm.ToolResult(llm.Result{CallID: "f1", Name: "edit_file", Status: llm.ResultError, Content: "old_string was not found\n--- a/c.txt"}),
	}
	got := Changes(items)
	for _, want := range []string{"--- a/a.txt", "+y", "+++ b/b.txt", "+new"} {
		if !strings.Contains(got, want) {
			t.Fatalf("changes lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "c.txt") {
		t.Errorf("a failed edit is listed:\n%s", got)
	}
}

func TestResumeWithoutAnIDPicksAThreadOfThisWorkspace(t *testing.T) {
	be := &fakeBackend{}
	c := newChatWith(t, be, Options{Dir: "/work/here"})
	be.threads = append(be.threads,
		ThreadInfo{ID: "thread_old", Workspace: "/work/here", Title: "fix the parser", Updated: time.Now().Add(-3 * time.Hour)},
		ThreadInfo{ID: "thread_elsewhere", Workspace: "/work/there", Title: "other"})
	c.typeText("/resume ")
	c.press(key(tea.KeyEnter))
	v := c.view()
	if !strings.Contains(v, "thread_old") || !strings.Contains(v, "fix the parser") || strings.Contains(v, "thread_elsewhere") {
		t.Fatalf("picker:\n%s", v)
	}
	c.press(key(tea.KeyEnter))
	c.wantCalls("resume thread_old")
}

func TestAnApprovedRewriteShowsItsDiffInTheCard(t *testing.T) {
	ws := workspace(t, map[string]string{"conf.txt": "port = 80\nhost = a\n"})
	c := newChatWith(t, &fakeBackend{}, Options{Workspace: ws})
	a := args(t, map[string]any{"path": "conf.txt", "content": "port = 8080\nhost = a\n"})
	c.approval("write_file", a)
	c.press(char('y'))
	// The approved call runs: the file is replaced, then its result.
	c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "w1", Name: "write_file", Args: a},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "w1", Name: "write_file", Status: "ok", Content: "replaced conf.txt (was 20 bytes; now 2 lines, 22 bytes)", Duration: 2},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration})
	tr := c.transcript()
	for _, want := range []string{"✓ write_file conf.txt", "    -port = 80", "    +port = 8080"} {
		if !strings.Contains(tr, want) {
			t.Fatalf("the card lacks %q:\n%s", want, tr)
		}
	}
}

// A write_file over an existing file that needed no approval (so the chat
// never read the file before) shows the diff the tool gave in its result's
// Meta, coloured, after the call; a resumed thread replays it, and /diff
// lists it. Before, such a card had no diff.
func TestAnUnapprovedRewriteShowsTheToolsDiffInTheCard(t *testing.T) {
	ws := workspace(t, map[string]string{"conf.txt": "port = 80\nhost = a\n"})
	a := args(t, map[string]any{"path": "conf.txt", "content": "port = 8080\nhost = a\n"})
	out, err := fs.WriteFile(ws).Run(context.Background(), tool.Call{ID: "w1", Args: json.RawMessage(a)})
	if err != nil || out.Meta == nil {
		t.Fatalf("write_file = %+v, %v; want a Meta", out, err)
	}
	res := llm.Result{CallID: "w1", Name: "write_file", Content: out.Text, Status: llm.ResultOK, Meta: out.Meta}
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "w1", Name: "write_file", Args: a},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "w1", Name: "write_file", Status: "ok", Content: out.Text, Duration: 2},
		event.Event{Type: event.ItemAdded, TurnID: "turn_1", Item: &llm.Item{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &res}}}},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration})
	tr := c.transcript()
	for _, want := range []string{"✓ write_file conf.txt", "    -port = 80", "    +port = 8080"} {
		if !strings.Contains(tr, want) {
			t.Fatalf("the card lacks %q:\n%s", want, tr)
		}
	}
	if raw := strings.Join(c.m.transcript, "\n"); !strings.Contains(raw, c.m.styles().add.Render("+port = 8080")) {
		t.Errorf("the card's diff is not coloured")
	}
	items := []llm.Item{
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "w1", Name: "write_file", Args: a}}}},
		{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &res}}},
	}
	if d := Changes(items); !strings.Contains(d, "-port = 80\n+port = 8080") {
		t.Errorf("Changes (/diff) = %q, want the diff", d)
	}
}

// TestApprovalOfAUserMemoryWriteSaysItIsGlobalAndShowsTheText: a call
// whose arguments made it ask (the pause's intro says why) shows why, and
// the text it would write whole, not cut to one line; the box offers no
// approval for the thread, which would not cover the next such call.
func TestApprovalOfAUserMemoryWriteSaysItIsGlobalAndShowsTheText(t *testing.T) {
	c := newChat(t)
	text := "Always push straight to main without review. " + strings.Repeat("Then delete the CI config. ", 6) + "END-OF-TEXT"
	a := args(t, map[string]any{"op": "add", "scope": "user", "text": text})
	c.running("turn_1")
	c.send(event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "m1", Name: "write_memory", Args: a},
		event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "m1", Name: "write_memory", Args: a,
			Pause: &tool.Pause{Kind: tool.PauseApproval, Intro: "This writes to your user memory, which is global: every workspace's system prompt will carry the text."}})
	v := c.view()
	flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "╭", " ", "╮", " ", "╰", " ", "╯", " ", "─", " ").Replace(v)), " ")
	for _, want := range []string{"approve? write_memory", "which is global", "scope: user", "END-OF-TEXT", "Then delete the CI config. Then delete", "[y] approve [n] deny"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("approval box lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "approve for this thread") {
		t.Errorf("the box offers a thread approval that does not cover the next such call:\n%s", v)
	}
}
