package tui

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/event"
)

func TestALongLiveAnswerShowsItsEndInTheScreensHeight(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: strings.Repeat("wörds go by ", 50000) + "THE-END"})
	v := c.view()
	if !strings.Contains(v, "THE-END") {
		t.Fatalf("the view lacks the answer's end:\n%s", v)
	}
	if n := strings.Count(v, "\n") + 1; n > 30 {
		t.Errorf("the view is %d lines on a 30-line screen", n)
	}
}

func TestTailCutsAtABoundary(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"one two three", 7, "three"},
		{"ééééé", 5, "éé"},
	} {
		got := tail(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("tail(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestAVeryLongAnswerIsCommittedWithoutMarkdown(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	long := strings.Repeat("**bold** words ", 6000)
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: long},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleFinish})
	tr := c.m.Transcript()
	if last := tr[len(tr)-1]; !strings.Contains(last, "**bold**") {
		t.Errorf("a %d-byte answer was rendered as markdown", len(long))
	}
}
