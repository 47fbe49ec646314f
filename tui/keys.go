package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// doubleEsc is how soon a second Esc must follow the first to interrupt a
// turn while a tool runs: one stray Esc should not kill a long command
// (users of other agents asked for exactly this).
const doubleEsc = time.Second

// backendTimeout bounds one backend call made from a key press; the calls
// only hand work over, they never wait for a turn.
const backendTimeout = 5 * time.Second

// key handles a key press.
//
//	Enter   send; while a turn runs, steer it; at a question, answer it
//	Tab     queue as the next turn
//	Esc     interrupt (twice within 1 s while a tool runs)
//	Ctrl-C  quit
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	m.notice = ""
	switch k.String() {
	case "ctrl+c":
		m.quitting = true
		return nil
	case "esc":
		m.escape()
		return nil
	case "enter":
		m.enter()
		return nil
	case "tab":
		m.tab()
		return nil
	}
	if m.pause != nil && m.pause.kind == tool.PauseApproval {
		// An approval takes one key; the input line keeps what was typed.
		if d, ok := decision(k.String()); ok {
			m.answer(m.pause.approval(d))
		} else {
			m.notice = "press y to approve, a to approve for this thread, n to deny"
		}
		return nil
	}
	if k.String() != "esc" {
		m.lastEsc = time.Time{}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// escape interrupts the running turn. While a tool runs the first press
// only arms the interrupt, and a second within a second fires it. When idle
// it clears the input line.
func (m *Model) escape() {
	if m.turnID == "" {
		m.input.Reset()
		return
	}
	now := m.now()
	if m.toolRunning() && (m.lastEsc.IsZero() || now.Sub(m.lastEsc) > doubleEsc) {
		m.lastEsc = now
		m.notice = "a tool is running: press Esc again to interrupt"
		return
	}
	m.lastEsc = time.Time{}
	ctx, cancel := m.callCtx()
	defer cancel()
	if err := m.be.Interrupt(ctx, m.thread.ID, m.turnID); err != nil {
		m.fail("interrupt", err)
		return
	}
	m.status = statusInterrupting
}

// toolRunning says a tool of the live round has started and not finished.
func (m *Model) toolRunning() bool {
	for _, c := range m.live.cards {
		if c.state == cardRunning {
			return true
		}
	}
	return false
}

// enter sends the input line: a slash command, an answer to the waiting
// question, steer for the running turn, or a new turn.
func (m *Model) enter() {
	text := strings.TrimSpace(m.input.Value())
	if m.pause != nil && m.pause.kind == tool.PauseApproval {
		m.notice = "press y to approve, a to approve for this thread, n to deny"
		return
	}
	if strings.HasPrefix(text, "/") {
		m.input.Reset()
		m.command(text)
		return
	}
	if m.pause != nil {
		a, err := m.pause.take(text)
		if err != nil {
			m.pause.hint = err.Error()
			return
		}
		m.pause.hint = ""
		m.input.Reset()
		if a != nil {
			m.answer(*a)
		}
		return
	}
	if text == "" {
		return
	}
	m.input.Reset()
	ctx, cancel := m.callCtx()
	defer cancel()
	if m.turnID != "" {
		id, err := m.be.Steer(ctx, m.thread.ID, m.turnID, text)
		if err == nil {
			m.steers = append(m.steers, pendingSteer{id: id, text: text})
			return
		}
		if !errors.Is(err, ErrNoActiveTurn) && !errors.Is(err, ErrTurnMismatch) {
			m.fail("steer", err)
			return
		}
		// The turn ended while the text was typed: it becomes the next
		// turn instead.
		m.queue(ctx, text)
		return
	}
	if _, err := m.be.Start(ctx, m.thread.ID, text); err != nil {
		if errors.Is(err, ErrBusy) {
			m.queue(ctx, text)
			return
		}
		m.fail("start", err)
		return
	}
	m.status = statusRunning
}

// tab queues the input line as the next turn (or starts it when idle).
func (m *Model) tab() {
	text := strings.TrimSpace(m.input.Value())
	if text == "" || strings.HasPrefix(text, "/") {
		return
	}
	m.input.Reset()
	ctx, cancel := m.callCtx()
	defer cancel()
	m.queue(ctx, text)
}

func (m *Model) queue(ctx context.Context, text string) {
	if err := m.be.Queue(ctx, m.thread.ID, text); err != nil {
		m.fail("queue", err)
		return
	}
	if m.turnID != "" {
		m.queued = append(m.queued, text)
	} else {
		m.status = statusRunning
	}
}

// answer hands a complete answer to the backend.
func (m *Model) answer(a loop.Answer) {
	ctx, cancel := m.callCtx()
	defer cancel()
	if err := m.be.Answer(ctx, m.thread.ID, a); err != nil {
		m.fail("answer", err)
		return
	}
	m.pause = nil
	m.status = statusRunning
}

func (m *Model) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, backendTimeout)
}

// fail shows a backend error.
func (m *Model) fail(what string, err error) {
	m.commit(m.styles().bad.Render("! " + what + ": " + err.Error()))
}
