package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name (-update writes it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./tui -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("the chat's screen changed (run with -update if meant)\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// hiddenChars are what must never reach the terminal from what a file, a
// tool or a model wrote.
var hiddenChars = []string{"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
	"\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\ufeff", "\x07", "\x00", "\r", "\u009b"}

func holdsHidden(t *testing.T, where, raw string) {
	t.Helper()
	for _, h := range hiddenChars {
		if strings.Contains(raw, h) {
			t.Errorf("%s holds %q:\n%q", where, h, raw)
		}
	}
	// The chat's own styles are SGR sequences; a file's are not let through.
	for _, seq := range []string{"\x1b[2J", "\x1b]0;", "\x1b]52"} {
		if strings.Contains(raw, seq) {
			t.Errorf("%s holds the escape sequence %q", where, seq)
		}
	}
}

// TestTheChatShowsHiddenCharactersVisibly: the streaming answer, tool
// cards (name, arguments also where JSON escaped them, result), a file
// edit's diff, a warning, an approval box and a resumed thread show
// escape sequences, controls, bidi overrides and isolates and zero-width
// characters as marks (termtext.Visible, the function rein run uses too),
// so a diff cannot read differently from what it does. Before, the chat
// replaced controls in diffs and a few lines only, and let every bidi
// character through.
func TestTheChatShowsHiddenCharactersVisibly(t *testing.T) {
	const rlo = "\u202e"
	c := newChat(t)
	c.running("turn_1")
	edit := `{"path":"auth` + rlo + `.go","old_string":"if isAdmin {","new_string":"if isAdmin \u202e} \u2066// only admins\u2069 {"}`
	grep := `{"pattern":"x\u200by","path":"\u202edocs"}`
	c.send(
		event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: "Fixed auth " + rlo + "evil\x1b[2J\x1b]0;pwned\x07 done"},
		event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "e1", Name: "edit_file", Args: edit},
		event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "e1", Name: "edit_file", Args: edit},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "e1", Name: "edit_file", Status: "ok",
			Content: "edited auth.go: replaced 1 occurrence at line 1\n--- a/auth.go\n+++ b/auth.go\n@@ -1 +1 @@\n-if isAdmin {\n+if isAdmin " + rlo + "} \u2066// only admins\u2069 {\n"},
		event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "g1", Name: "grep", Args: grep},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "g1", Name: "grep", Status: "ok", Content: "docs/a.md:1: \ufeffhello " + rlo + "\x1b[31mred\r"},
		event.Event{Type: event.Warning, TurnID: "turn_1", Content: "a tool said \u2067this\u2069"},
	)
	raw := c.m.View().Content
	holdsHidden(t, "the streaming view", raw)
	if tr := c.transcript(); !strings.Contains(tr, "a tool said <U+2067>this<U+2069>") {
		t.Errorf("the warning is not shown with its marks:\n%s", tr)
	}
	holdsHidden(t, "the transcript", c.transcript())
	golden(t, "hidden_live.txt", c.view())

	approve := `{"command":"rm -rf \u202e/ build\u0007"}`
	c.send(event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "x1", Name: "exec", Args: approve},
		event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "x1", Name: "exec", Args: approve, Pause: &tool.Pause{Kind: tool.PauseApproval}})
	memory := `{"op":"add","scope":"user","text":"Push \u202eniam ot\u202c straight\u200b"}`
	holdsHidden(t, "the approval box", c.m.View().Content)
	golden(t, "hidden_approval.txt", c.view())
	c.press(char('n'))
	c.send(event.Event{Type: event.PauseResolved, TurnID: "turn_1", CallID: "x1", Name: "exec", Status: "deny"},
		event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "m1", Name: "write_memory", Args: memory},
		event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "m1", Name: "write_memory", Args: memory,
			Pause: &tool.Pause{Kind: tool.PauseApproval, Intro: "This writes to your user memory, which is global" + rlo}})
	holdsHidden(t, "the user-scope approval box", c.m.View().Content)
	golden(t, "hidden_approval_user.txt", c.view())

	// A resumed thread replays what was stored as it was shown.
	r := newChatWith(t, &fakeBackend{resumeInfo: &ThreadInfo{ID: "thread_9"}, resumeItems: []llm.Item{
		llm.UserText("why " + rlo + "?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "Because " + rlo + "sdrawkcab\x1b[2J"}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "g2", Name: "grep", Args: grep}}}},
		{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &llm.Result{CallID: "g2", Name: "grep", Status: llm.ResultOK, Content: "hit \u2066x\u2069"}}}},
	}}, Options{})
	r.typeText("/resume thread_9")
	r.press(key('\r'))
	tr := r.transcript()
	holdsHidden(t, "the resumed thread", tr)
	for _, want := range []string{"Because <U+202E>sdrawkcab<U+001B>[2J", "hit <U+2066>x<U+2069>", "why <U+202E>?"} {
		if !strings.Contains(tr, want) {
			t.Errorf("the resumed thread lacks %q:\n%s", want, tr)
		}
	}
}
