package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
)

func TestLineBreakKeysInsertANewline(t *testing.T) {
	for _, tt := range []struct {
		name string
		key  tea.KeyPressMsg
	}{
		{"shift+enter", tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModShift}},
		{"ctrl+j", ctrl('j')},
		{"alt+enter", tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newChat(t)
			c.typeText("first line")
			c.press(tt.key)
			c.typeText("second line")
			c.wantCalls()
			c.press(key(tea.KeyEnter))
			c.wantCalls("start thread_1 first line\nsecond line")
		})
	}
}

func TestPasteKeepsItsLineBreaks(t *testing.T) {
	c := newChat(t)
	c.m.Update(tea.PasteMsg{Content: "one\r\ntwo\rthree\nfour"})
	if got := c.m.input.Value(); got != "one\ntwo\nthree\nfour" {
		t.Fatalf("input after the paste = %q", got)
	}
	c.wantCalls()
	c.press(key(tea.KeyEnter))
	c.wantCalls("start thread_1 one\ntwo\nthree\nfour")
}

func TestALongPasteArrivesWhole(t *testing.T) {
	c := newChat(t)
	lines := make([]string, 300)
	for i := range lines {
		lines[i] = "line " + strings.Repeat("x", i%50)
	}
	c.m.Update(tea.PasteMsg{Content: strings.Join(lines, "\n")})
	if got := c.m.input.Value(); got != strings.Join(lines, "\n") {
		t.Fatalf("the paste was cut: %d lines arrived of %d", strings.Count(got, "\n")+1, len(lines))
	}
}

func TestHistoryRecallWithUpAndDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "history.jsonl")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	c := newChatWith(t, &fakeBackend{}, Options{History: h})
	for _, s := range []string{"first", "second\nwith two lines"} {
		c.m.setInput(s)
		c.press(key(tea.KeyEnter))
		c.send(event.Event{Type: event.TurnStarted, TurnID: "t"}, event.Event{Type: event.TurnCompleted, TurnID: "t", Status: "completed"})
	}
	c.typeText("draft")
	steps := []struct {
		key  rune
		want string
	}{
		{tea.KeyUp, "second\nwith two lines"},
		// The cursor is at the start of the recalled text: Up goes on.
		{tea.KeyUp, "first"},
		{tea.KeyUp, "first"},
		{tea.KeyDown, "second\nwith two lines"},
		{tea.KeyDown, "draft"},
	}
	for i, s := range steps {
		c.press(key(s.key))
		if got := c.m.input.Value(); got != s.want {
			t.Fatalf("step %d: input = %q, want %q", i, got, s.want)
		}
	}

	// Another chat in the workspace recalls them from the file.
	h2, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	c2 := newChatWith(t, &fakeBackend{}, Options{History: h2})
	c2.press(key(tea.KeyUp))
	if got := c2.m.input.Value(); got != "second\nwith two lines" {
		t.Errorf("a new chat recalls %q", got)
	}
}

func TestUpInsideAMultiLineInputMovesTheCursor(t *testing.T) {
	h, _ := OpenHistory(filepath.Join(t.TempDir(), "h.jsonl"))
	if err := h.Add("older"); err != nil {
		t.Fatal(err)
	}
	c := newChatWith(t, &fakeBackend{}, Options{History: h})
	c.typeText("a")
	c.press(ctrl('j'))
	c.typeText("b")
	c.press(key(tea.KeyUp))
	if got := c.m.input.Value(); got != "a\nb" {
		t.Fatalf("Up on the second line recalled history: %q", got)
	}
	c.press(key(tea.KeyUp))
	if got := c.m.input.Value(); got != "older" {
		t.Fatalf("Up on the first line did not recall: %q", got)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	h.limit = 3
	for i := range 20 {
		if err := h.Add(strings.Repeat("x", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.Entries(); len(got) != 3 || got[2] != strings.Repeat("x", 20) {
		t.Fatalf("entries = %q", got)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 2*3 {
		t.Errorf("the file holds %d lines; the limit is 3 (twice that before a rewrite)", n)
	}
	// A repeat of the last input and a cut line are not kept.
	_ = h.Add(strings.Repeat("x", 20))
	if err := os.WriteFile(path, append(data, []byte("\"cut sho")...), 0o600); err != nil {
		t.Fatal(err)
	}
	h2, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Entries(); got[len(got)-1] != strings.Repeat("x", 20) {
		t.Errorf("entries after a cut line = %q", got)
	}
}

func TestHistoryPathIsPerWorkspace(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	a, err := HistoryPath("/work/a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := HistoryPath("/work/b")
	if a == b || !strings.HasPrefix(a, os.Getenv("XDG_STATE_HOME")) {
		t.Errorf("history paths %s and %s", a, b)
	}
}

func TestCtrlCInterruptsThenQuits(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.press(ctrl('c'))
	c.wantCalls("interrupt thread_1 turn_1")
	if c.m.quitting {
		t.Fatal("the first Ctrl-C during a turn quit")
	}
	if v := c.view(); !strings.Contains(v, "press Ctrl-C again to quit") {
		t.Errorf("no hint after the interrupt:\n%s", v)
	}
	c.clock.advance(1500 * time.Millisecond)
	c.press(ctrl('c'))
	if !c.m.quitting {
		t.Fatal("a second Ctrl-C within 2 s did not quit")
	}
	if h := c.m.ResumeHint(); h != "To resume this thread: rein chat --thread thread_1" {
		t.Errorf("resume hint = %q", h)
	}
}

func TestCtrlCAfterTwoSecondsInterruptsAgain(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.press(ctrl('c'))
	c.clock.advance(3 * time.Second)
	c.press(ctrl('c'))
	if c.m.quitting {
		t.Fatal("a Ctrl-C 3 s after the first quit while the turn still runs")
	}
	c.wantCalls("interrupt thread_1 turn_1", "interrupt thread_1 turn_1")
}

func TestCtrlCWhenIdleQuitsWithoutAHintForAnEmptyThread(t *testing.T) {
	c := newChat(t)
	c.press(ctrl('c'))
	if !c.m.quitting {
		t.Fatal("Ctrl-C when idle did not quit")
	}
	if h := c.m.ResumeHint(); h != "" {
		t.Errorf("a thread without turns got a resume hint %q", h)
	}
}

func TestCtrlDQuitsOnlyOnAnEmptyLine(t *testing.T) {
	c := newChat(t)
	c.typeText("ab")
	c.press(key(tea.KeyLeft))
	c.press(ctrl('d'))
	if c.m.quitting {
		t.Fatal("Ctrl-D with text in the input quit")
	}
	c.m.input.Reset()
	c.press(ctrl('d'))
	if !c.m.quitting {
		t.Fatal("Ctrl-D on an empty line did not quit")
	}
}

func TestEscHoldsTheQueueUntilTheUserConfirms(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.typeText("then B")
	c.press(key(tea.KeyTab))
	c.press(key(tea.KeyEscape))
	c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_1", Status: "interrupted", Turn: &event.TurnSummary{Status: "interrupted"}})
	c.wantCalls("interrupt thread_1 turn_1")
	if v := c.view(); !strings.Contains(v, "queued 1: then B") {
		t.Fatalf("the queue is gone after the interrupt:\n%s", v)
	}
	if tr := c.transcript(); !strings.Contains(tr, "1 queued turn waiting: Enter on an empty line sends the next") {
		t.Errorf("no word on the held queue:\n%s", tr)
	}
	c.press(key(tea.KeyEnter))
	c.wantCalls("interrupt thread_1 turn_1", "start thread_1 then B")
}

func TestSendingReleasesAHeldQueueAfterIt(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.typeText("then B")
	c.press(key(tea.KeyTab))
	c.press(key(tea.KeyEscape))
	c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_1", Status: "interrupted", Turn: &event.TurnSummary{Status: "interrupted"}})
	c.typeText("actually C")
	c.press(key(tea.KeyEnter))
	c.running("turn_2")
	c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_2", Status: "completed", Turn: &event.TurnSummary{Status: "completed"}})
	c.wantCalls("interrupt thread_1 turn_1", "start thread_1 actually C", "start thread_1 then B")
}

func TestSlashOpensAFilteredMenu(t *testing.T) {
	c := newChat(t)
	c.typeText("/c")
	v := c.view()
	for _, want := range []string{"/cost", "/compact", "/clear"} {
		if !strings.Contains(v, want) {
			t.Fatalf("menu lacks %s:\n%s", want, v)
		}
	}
	if strings.Contains(v, "/model") {
		t.Errorf("the menu is not filtered:\n%s", v)
	}
	c.press(key(tea.KeyDown))
	c.press(key(tea.KeyEnter))
	// The second entry, /compact, ran.
	c.wantCalls("compact thread_1")
	if c.m.menu != nil {
		t.Error("the menu is still open")
	}
}

func TestEscClosesTheMenuAndKeepsTheInput(t *testing.T) {
	c := newChat(t)
	c.typeText("/he")
	c.press(key(tea.KeyEscape))
	if c.m.menu != nil || c.m.input.Value() != "/he" {
		t.Errorf("menu %v, input %q", c.m.menu, c.m.input.Value())
	}
}
