package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

func TestEnterWhenIdleStartsATurn(t *testing.T) {
	c := newChat(t)
	c.typeText("hello there")
	c.press(key(tea.KeyEnter))
	c.wantCalls("start thread_1 hello there")
	if v := c.m.input.Value(); v != "" {
		t.Errorf("input after Enter = %q, want it cleared", v)
	}
}

func TestEnterWhileRunningSteers(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.typeText("use the other file")
	c.press(key(tea.KeyEnter))
	c.wantCalls("steer thread_1 turn_1 use the other file")
	if v := c.view(); !strings.Contains(v, "steer, read before the next model call: use the other file") {
		t.Errorf("view does not show the pending steer:\n%s", v)
	}
	// The engine reads it: it leaves the pending list and joins the
	// transcript in its place.
	c.send(event.Event{Type: event.ItemAdded, TurnID: "turn_1", Item: &llm.Item{Role: llm.RoleUser, Origin: llm.OriginSteer, Parts: []llm.Part{{Kind: llm.PartText, Text: "use the other file"}}}})
	if v := c.view(); strings.Contains(v, "steer, read before") {
		t.Errorf("the steer is still pending after the engine read it:\n%s", v)
	}
	if tr := c.transcript(); !strings.Contains(tr, "› use the other file  (steered into the turn)") {
		t.Errorf("transcript lacks the steered text:\n%s", tr)
	}
}

func TestSteerRacingTheTurnsEndIsQueued(t *testing.T) {
	for _, err := range []error{ErrNoActiveTurn, ErrTurnMismatch} {
		t.Run(err.Error(), func(t *testing.T) {
			c := newChat(t)
			c.be.steerErr = err
			c.running("turn_1")
			c.typeText("more")
			c.press(key(tea.KeyEnter))
			// The chat keeps it as the next turn, and starts it once the
			// turn it raced has ended.
			c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_1", Status: "completed", Turn: &event.TurnSummary{Status: "completed"}})
			c.wantCalls("steer thread_1 turn_1 more", "start thread_1 more")
		})
	}
}

func TestTabQueuesTheNextTurn(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.typeText("then do B")
	c.press(key(tea.KeyTab))
	c.typeText("then do C")
	c.press(key(tea.KeyTab))
	// The chat holds the queue: nothing reaches the backend while the
	// turn runs.
	c.wantCalls()
	v := c.view()
	if !strings.Contains(v, "queued 1: then do B") || !strings.Contains(v, "queued 2: then do C") || !strings.Contains(v, "2 queued") {
		t.Fatalf("view does not show the queue in order:\n%s", v)
	}
	// The first queued text becomes the next turn once the turn completes.
	c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_1", Status: "completed", Turn: &event.TurnSummary{Status: "completed", StopReason: "finished"}})
	c.wantCalls("start thread_1 then do B")
	c.send(event.Event{Type: event.TurnStarted, TurnID: "turn_2"},
		event.Event{Type: event.ItemAdded, TurnID: "turn_2", Item: &llm.Item{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "then do B"}}}})
	v = c.view()
	if strings.Contains(v, "then do B") || !strings.Contains(v, "queued 1: then do C") {
		t.Errorf("after the queued turn started, view:\n%s", v)
	}
	if !strings.Contains(c.transcript(), "› then do B") {
		t.Errorf("transcript lacks the queued turn's input:\n%s", c.transcript())
	}
}

func TestTabWhenIdleStartsAtOnce(t *testing.T) {
	c := newChat(t)
	c.typeText("now")
	c.press(key(tea.KeyTab))
	c.wantCalls("start thread_1 now")
	if len(c.m.queued) != 0 {
		t.Errorf("queued = %q; an idle thread runs the text at once", c.m.queued)
	}
}

func TestEscInterruptsTheRunningTurn(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: "Once upon a time"})
	c.press(key(tea.KeyEscape))
	c.wantCalls("interrupt thread_1 turn_1")
	if v := c.view(); !strings.HasPrefix(lastLine(v), "interrupting… · ") {
		t.Errorf("footer does not say interrupting:\n%s", v)
	}
	c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_1", Status: "interrupted", Turn: &event.TurnSummary{Status: "interrupted", StopReason: "cancelled"}})
	if v := c.view(); !strings.HasPrefix(lastLine(v), "interrupted · ") {
		t.Errorf("footer does not say interrupted:\n%s", v)
	}
	tr := c.transcript()
	if !strings.Contains(tr, "Once upon a time …") || !strings.Contains(tr, "■ interrupted") {
		t.Errorf("transcript:\n%s", tr)
	}
}

func TestEscWhenIdleClearsTheInput(t *testing.T) {
	c := newChat(t)
	c.typeText("draft")
	c.press(key(tea.KeyEscape))
	c.wantCalls()
	if v := c.m.input.Value(); v != "" {
		t.Errorf("input = %q, want cleared", v)
	}
}

func TestDoubleEscWhileAToolRuns(t *testing.T) {
	tests := []struct {
		name string
		// gaps are the times between presses.
		gaps []time.Duration
		want bool
	}{
		{"one press only arms", nil, false},
		{"second press within a second interrupts", []time.Duration{500 * time.Millisecond}, true},
		{"second press after a second only re-arms", []time.Duration{1500 * time.Millisecond}, false},
		{"a third press soon after the re-arm interrupts", []time.Duration{1500 * time.Millisecond, 300 * time.Millisecond}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChat(t)
			c.running("turn_1")
			c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "c1", Name: "exec", Args: `{"command":"sleep 60"}`})
			c.press(key(tea.KeyEscape))
			if v := c.view(); !strings.Contains(v, "press Esc again to interrupt") {
				t.Errorf("no hint after the first press:\n%s", v)
			}
			for _, g := range tt.gaps {
				c.clock.advance(g)
				c.press(key(tea.KeyEscape))
			}
			got := len(c.be.log()) > 1
			if got != tt.want {
				t.Errorf("interrupted = %v, want %v (calls %q)", got, tt.want, c.be.log())
			}
		})
	}
}

func TestSingleEscOnceTheToolFinished(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "c1", Name: "read_file"},
		event.Event{Type: event.Result, TurnID: "turn_1", CallID: "c1", Name: "read_file", Status: "ok", Content: "x", Duration: 3})
	c.press(key(tea.KeyEscape))
	c.wantCalls("interrupt thread_1 turn_1")
}

func TestCardsFollowTheCall(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	steps := []struct {
		ev   event.Event
		want string
	}{
		{event.Event{Type: event.CallCompleted, CallID: "c1", Name: "read_file", Args: `{"path":"main.go"}`}, "○ read_file path=main.go"},
		{event.Event{Type: event.ToolStarted, CallID: "c1", Name: "read_file", Args: `{"path":"main.go"}`}, "● read_file path=main.go  0.0s"},
		{event.Event{Type: event.Result, CallID: "c1", Name: "read_file", Status: "ok", Content: "package main\n\nfunc main() {}", Duration: 12}, "✓ read_file path=main.go  12 ms  → package main (+2 lines)"},
		{event.Event{Type: event.CallCompleted, CallID: "c2", Name: "exec", Args: `{"command":"go test ./..."}`}, `○ exec command="go test ./..."`},
		{event.Event{Type: event.ToolStarted, CallID: "c2", Name: "exec"}, "● exec"},
		{event.Event{Type: event.Result, CallID: "c2", Name: "exec", Status: "error", Content: "exit status 1", Duration: 2500}, "✗ exec command=\"go test ./...\"  2.5s  → exit status 1"},
	}
	for _, s := range steps {
		s.ev.TurnID = "turn_1"
		c.send(s.ev)
		if v := c.view(); !strings.Contains(v, s.want) {
			t.Fatalf("after %s of %s, view lacks %q:\n%s", s.ev.Type, s.ev.CallID, s.want, v)
		}
	}
	c.send(event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration})
	tr := c.transcript()
	for _, want := range []string{"✓ read_file path=main.go  12 ms", "✗ exec"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q after the round:\n%s", want, tr)
		}
	}
	if strings.Contains(c.view(), "read_file") {
		t.Errorf("the committed round is still in the view:\n%s", c.view())
	}
}

func TestRunningCardShowsElapsedTime(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.ToolStarted, TurnID: "turn_1", CallID: "c1", Name: "exec"})
	c.clock.advance(2300 * time.Millisecond)
	if v := c.view(); !strings.Contains(v, "● exec") || !strings.Contains(v, "2.3s") {
		t.Errorf("view:\n%s", v)
	}
}

func TestRoundsCommitByRole(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.ThinkingDelta, TurnID: "turn_1", Delta: "First I should\nlook at the\nfiles."},
		event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: "Let me **look**."},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 1, Role: event.RoleNarration},
		event.Event{Type: event.RoundStarted, TurnID: "turn_1", Round: 2},
		event.Event{Type: event.TextDelta, TurnID: "turn_1", Delta: "The answer is **42**."},
		event.Event{Type: event.RoundCompleted, TurnID: "turn_1", Round: 2, Role: event.RoleFinish})
	tr := c.m.Transcript()
	round1, round2 := tr[len(tr)-2], tr[len(tr)-1]
	if round1 != "∴ thought (7 words): First I should look at the files.\nLet me **look**." {
		t.Errorf("narration round = %q; want the thinking on one line and the preamble as written", round1)
	}
	if !strings.Contains(round2, "The answer is 42.") || strings.Contains(round2, "**") {
		t.Errorf("answer = %q; want it rendered as markdown", round2)
	}
	// Narration is dim, the answer is not.
	raw := c.m.transcript[len(c.m.transcript)-2]
	if !strings.Contains(raw, "\x1b[2m") {
		t.Errorf("narration %q is not dim", raw)
	}
}

func TestStatusAndFooter(t *testing.T) {
	c := newChat(t)
	if v := c.view(); !strings.Contains(v, "idle · test:model · 0 tokens · $0.0000 · ctx —") {
		t.Fatalf("idle footer:\n%s", v)
	}
	c.running("turn_1")
	c.send(event.Event{Type: event.RoundStarted, TurnID: "turn_1", Round: 2},
		event.Event{Type: event.Usage, TurnID: "turn_1", Usage: &llm.Usage{InputTokens: 1200, OutputTokens: 300}, Cost: 0.0125})
	if v := c.view(); !strings.Contains(v, "running round 2 · 0s · test:model · 1.5k tokens · $0.0125 · ctx —") {
		t.Errorf("running footer:\n%s", v)
	}
	c.clock.advance(12 * time.Second)
	if v := c.view(); !strings.Contains(v, "running round 2 · 12s · test:model") {
		t.Errorf("the footer's timer does not run:\n%s", v)
	}
	c.send(event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "c9", Name: "ask_user", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: "Which?"}}}})
	if v := c.view(); !strings.HasPrefix(lastLine(v), "paused · ") {
		t.Errorf("paused footer:\n%s", v)
	}
	c.send(event.Event{Type: event.TurnCompleted, TurnID: "turn_1", Status: "completed", Turn: &event.TurnSummary{Status: "completed", Usage: llm.Usage{InputTokens: 1200, OutputTokens: 300}, Cost: 0.0125}})
	// A second turn adds to the thread's tally.
	c.running("turn_2")
	c.send(event.Event{Type: event.Usage, TurnID: "turn_2", Usage: &llm.Usage{InputTokens: 500}, Cost: 0.001})
	if v := c.view(); !strings.Contains(v, "2.0k tokens · $0.0135") {
		t.Errorf("footer after two turns:\n%s", v)
	}
	c.send(event.Event{Type: event.Context, TurnID: "turn_2", Context: &event.ContextReport{Window: 128000, Used: 64000, Percent: 50, Estimated: true}})
	if v := c.view(); !strings.Contains(v, "ctx ~64k/128k (50%)") {
		t.Errorf("footer with a context report:\n%s", v)
	}
}

func TestAskUserCardAnswersInline(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	c.send(event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "ask1", Name: "ask_user", Pause: &tool.Pause{
		Kind:  tool.PauseAskUser,
		Intro: "Two things first.",
		Questions: []tool.Question{
			{ID: "q1", Prompt: "Which database?", Options: []tool.Option{{Label: "SQLite"}, {Label: "Postgres", Description: "needs a server"}}},
			{ID: "q2", Prompt: "Anything else?"},
		},
	}})
	v := c.view()
	for _, want := range []string{"Two things first.", "Which database?", "(1/2)", "1. SQLite", "2. Postgres — needs a server"} {
		if !strings.Contains(v, want) {
			t.Fatalf("card lacks %q:\n%s", want, v)
		}
	}
	c.typeText("7")
	c.press(key(tea.KeyEnter))
	if v := c.view(); !strings.Contains(v, "pick an option, 1–2") {
		t.Fatalf("no hint for an option out of range:\n%s", v)
	}
	c.m.input.Reset()
	c.typeText("2")
	c.press(key(tea.KeyEnter))
	if v := c.view(); !strings.Contains(v, "Anything else?") || !strings.Contains(v, "(2/2)") {
		t.Fatalf("second question not shown:\n%s", v)
	}
	c.typeText("keep it small")
	c.press(key(tea.KeyEnter))
	if len(c.be.answers) != 1 {
		t.Fatalf("answers = %+v", c.be.answers)
	}
	a := c.be.answers[0]
	if a.TurnID != "turn_1" || a.CallID != "ask1" || len(a.Answers) != 2 ||
		a.Answers[0].QuestionID != "q1" || a.Answers[0].Text != "Postgres" ||
		a.Answers[1].QuestionID != "q2" || a.Answers[1].Text != "keep it small" {
		t.Errorf("answer = %+v", a)
	}
	if c.m.pause != nil {
		t.Error("the card is still up after the answer")
	}
}

func TestPickAnswers(t *testing.T) {
	opts := []tool.Option{{Label: "red"}, {Label: "green"}, {Label: "blue"}}
	tests := []struct {
		name  string
		q     tool.Question
		typed string
		want  string
		err   bool
	}{
		{"number", tool.Question{Options: opts}, "2", "green", false},
		{"label in any case", tool.Question{Options: opts}, "BLUE", "blue", false},
		{"several when multi-select", tool.Question{Options: opts, MultiSelect: true}, "1,3", "red, blue", false},
		{"several refused otherwise", tool.Question{Options: opts}, "1,3", "", true},
		{"free text refused without allow_free_text", tool.Question{Options: opts}, "purple", "", true},
		{"free text allowed", tool.Question{Options: opts, AllowFreeText: true}, "purple", "purple", false},
		{"no options takes any text", tool.Question{}, "anything", "anything", false},
		{"empty refused", tool.Question{}, "  ", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pick(&tt.q, tt.typed)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("pick(%q) = %q, %v; want %q, error %v", tt.typed, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestApprovalCard(t *testing.T) {
	for _, tt := range []struct {
		key  rune
		want string
	}{{'y', "approve"}, {'a', "approve_thread"}, {'n', "deny"}} {
		t.Run(tt.want, func(t *testing.T) {
			c := newChat(t)
			c.running("turn_1")
			c.send(event.Event{Type: event.CallCompleted, TurnID: "turn_1", CallID: "x1", Name: "exec", Args: `{"command":"rm -rf build"}`},
				event.Event{Type: event.PauseRequested, TurnID: "turn_1", CallID: "x1", Name: "exec", Args: `{"command":"rm -rf build"}`, Pause: &tool.Pause{Kind: tool.PauseApproval}})
			v := c.view()
			for _, want := range []string{"approve? exec command=\"rm -rf build\"", "[y] approve  [a] approve for this thread  [n] deny", "? exec", "waiting for you"} {
				if !strings.Contains(v, want) {
					t.Fatalf("view lacks %q:\n%s", want, v)
				}
			}
			c.press(char('z'))
			if len(c.be.answers) != 0 || !strings.Contains(c.view(), "press y to approve") {
				t.Fatalf("another key answered or gave no hint: %+v", c.be.answers)
			}
			c.press(char(tt.key))
			if len(c.be.answers) != 1 || string(c.be.answers[0].Decision) != tt.want || c.be.answers[0].CallID != "x1" {
				t.Fatalf("answers = %+v, want %s for x1", c.be.answers, tt.want)
			}
		})
	}
}

func TestSlashCommands(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		running bool
		setup   func(*fakeBackend)
		want    string
		calls   []string
	}{
		{name: "help", line: "/help", want: "tab          queue as the next turn"},
		{name: "compact without a window", line: "/compact", setup: func(f *fakeBackend) { f.compactErr = ErrNoCompaction },
			want: "/compact is not available yet", calls: []string{"compact thread_1"}},
		{name: "compact", line: "/compact", want: "compacting", calls: []string{"compact thread_1"}},
		{name: "compact refused while running", line: "/compact", running: true, want: "/compact: a turn is running"},
		{name: "unknown", line: "/frobnicate", want: "unknown command /frobnicate"},
		{name: "new", line: "/new", want: "── thread thread_2", calls: []string{"new thread_2"}},
		{name: "new refused while running", line: "/new", running: true, want: "/new: a turn is running"},
		{name: "resume without a store", line: "/resume thread_old", setup: func(f *fakeBackend) { f.resumeErr = ErrNotStored },
			want: "threads are not stored yet", calls: []string{"resume thread_old"}},
		{name: "resume", line: "/resume thread_9", want: "earlier answer", calls: []string{"resume thread_9"}},
		{name: "resume without an id and no other thread", line: "/resume ", want: "no other threads in this workspace"},
		{name: "threads", line: "/threads", want: "* thread_1  0 turns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChat(t)
			if tt.setup != nil {
				tt.setup(c.be)
			}
			if tt.running {
				c.running("turn_1")
			}
			c.typeText(tt.line)
			c.press(key(tea.KeyEnter))
			if tr := c.transcript(); !strings.Contains(tr, tt.want) {
				t.Errorf("transcript lacks %q:\n%s", tt.want, tr)
			}
			c.wantCalls(tt.calls...)
		})
	}
}

func TestEventsOfAnotherThreadAreIgnored(t *testing.T) {
	c := newChat(t)
	c.send(event.Event{Type: event.TurnStarted, ThreadID: "thread_other", TurnID: "turn_x"})
	if c.m.turnID != "" {
		t.Errorf("an event of another thread started a turn here")
	}
}

func TestCtrlCQuits(t *testing.T) {
	c := newChat(t)
	cmd := c.press(ctrl('c'))
	if cmd == nil {
		t.Fatal("no command after ctrl+c")
	}
	if !c.m.quitting {
		t.Error("ctrl+c did not quit")
	}
}

func TestPrintsKeepTheirOrder(t *testing.T) {
	c := newChat(t)
	c.m.printing, c.m.printed = false, 0
	first := c.m.flush()
	c.m.commit("later")
	if second := c.m.flush(); second != nil {
		t.Fatal("a second print started while the first was in flight")
	}
	if first == nil {
		t.Fatal("nothing printed")
	}
	c.m.Update(printedMsg{})
	if c.m.printed != len(c.m.transcript) {
		t.Errorf("printed %d of %d blocks after the first print landed", c.m.printed, len(c.m.transcript))
	}
}

func TestBackendErrorsAreShown(t *testing.T) {
	c := newChat(t)
	c.be.steerErr = errors.New("disk full")
	c.running("turn_1")
	c.typeText("x")
	c.press(key(tea.KeyEnter))
	if tr := c.transcript(); !strings.Contains(tr, "! steer: disk full") {
		t.Errorf("transcript:\n%s", tr)
	}
}
