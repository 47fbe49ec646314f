package tui

import (
	"runtime"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
)

// The streaming answer's drawing is kept between frames: redrawing the
// screen for a key press or a tick does not wrap the answer again (before,
// every View wrapped the answer's last ~10 KB, half a millisecond a frame
// while it streamed), and the empty input box is not drawn again either.
func TestRedrawingWhileStreamingDoesNotWrapTheAnswerAgain(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: strings.Repeat("streaming words go by ", 4000)})
	c.m.View()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 20
	for range n {
		c.m.View()
	}
	runtime.ReadMemStats(&after)
	// The footer and the joined screen take a few KB; wrapping the
	// answer's last ~10 KB and the textarea's placeholder took ten times
	// that.
	if b := (after.TotalAlloc - before.TotalAlloc) / n; b > 32<<10 {
		t.Errorf("a redraw with nothing new allocates %d bytes; the answer is wrapped again", b)
	} else if testing.Verbose() {
		t.Logf("%d bytes a redraw", b)
	}
}

// The kept drawing follows the text: it grows with each chunk, changes
// with the width, and a new round of the same length as the last one is
// drawn anew.
func TestTheLiveViewFollowsTheText(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: "alpha beta"})
	if v := c.view(); !strings.Contains(v, "alpha beta") {
		t.Fatalf("view:\n%s", v)
	}
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: " gamma"})
	if v := c.view(); !strings.Contains(v, "alpha beta gamma") {
		t.Fatalf("after a chunk:\n%s", v)
	}
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: " delta epsilon"})
	c.m.Update(tea.WindowSizeMsg{Width: 20, Height: 30})
	if v := c.view(); !strings.Contains(v, "alpha beta gamma\ndelta epsilon") {
		t.Fatalf("at width 20:\n%s", v)
	}
	c.m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	if v := c.view(); !strings.Contains(v, "alpha beta gamma delta epsilon") {
		t.Fatalf("back at width 100:\n%s", v)
	}
	c.send(event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration},
		event.Event{Type: event.RoundStarted, TurnID: "turn_1", Round: 2},
		event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: "one two three four five sixty!"})
	if v := c.view(); !strings.Contains(v, "one two three four five sixty!") {
		t.Fatalf("a new round of the same length shows the old text:\n%s", v)
	}
	// The input box: typed text shows, and the empty box comes back.
	c.press(char('x'))
	if v := c.view(); !strings.Contains(v, "› x") {
		t.Fatalf("typed x:\n%s", v)
	}
	c.press(tea.KeyPressMsg{Code: tea.KeyBackspace})
	if v := c.view(); !strings.Contains(v, "ask anything") {
		t.Fatalf("the empty box:\n%s", v)
	}
}

// BenchmarkRedrawWhileStreaming is the chat's cost of a redraw while a
// long answer streams: after a key press (nothing new in the answer) and
// after a chunk (the answer grew): go test -run '^$' -bench
// RedrawWhileStreaming ./tui
func BenchmarkRedrawWhileStreaming(b *testing.B) {
	m, err := New(b.Context(), &fakeBackend{}, Options{Model: "test:model"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	m.Update(eventsMsg{sub: m.sub, events: []event.Event{
		{Type: event.TurnStarted, ThreadID: m.thread.ID, TurnID: "turn_1"},
		{Type: event.TextDelta, ThreadID: m.thread.ID, TurnID: "turn_1", Delta: strings.Repeat("streaming words go by ", 4000)},
	}})
	b.Run("key", func(b *testing.B) {
		for range b.N {
			m.Update(char('x'))
			m.View()
			m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
			m.View()
		}
	})
	b.Run("chunk", func(b *testing.B) {
		chunk := eventsMsg{sub: m.sub, events: []event.Event{{Type: event.TextDelta, ThreadID: m.thread.ID, TurnID: "turn_1", Delta: "word"}}}
		for range b.N {
			m.Update(chunk)
			m.View()
		}
	})
}
