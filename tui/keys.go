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

// doubleCtrlC is how soon a second Ctrl-C must follow the one that
// interrupted a turn to quit the chat.
const doubleCtrlC = 2 * time.Second

// key handles a key press.
//
//	Enter         send; while a turn runs, steer it; at a question, answer
//	              it; on an empty line after an interrupt, send the queue
//	Shift+Enter   a line break (also Ctrl+J, Alt+Enter)
//	Up, Down      earlier inputs, from the first and last line
//	Tab           queue as the next turn
//	Esc           interrupt (twice within 1 s while a tool runs); the queue
//	              then waits
//	Ctrl-C        interrupt the running turn; quit when idle or pressed
//	              again within 2 s
//	Ctrl-D        quit, on an empty line
//	Ctrl-O        show the folded diff whole
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	m.notice = ""
	ks := k.String()
	switch ks {
	case "ctrl+c":
		m.ctrlC()
		return nil
	case "ctrl+d":
		if m.input.Value() == "" {
			m.quitting = true
			return nil
		}
	case "ctrl+o":
		m.expand()
		return nil
	}
	if m.menuKey(ks) {
		return nil
	}
	switch ks {
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
		if d, ok := decision(ks); ok {
			if p := m.pause; d != loop.Deny && p.known && p.tool == "write_file" {
				// The card after the call diffs against what the
				// approval showed.
				put(&m.before, p.callID, p.before)
			}
			m.answer(m.pause.approval(d))
		} else {
			m.notice = "press y to approve, a to approve for this thread, n to deny"
		}
		return nil
	}
	m.lastEsc = time.Time{}
	if m.historyKey(ks) {
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	m.updateMenu()
	return cmd
}

// ctrlC interrupts the running turn, or quits: when idle, or when it
// follows the Ctrl-C that interrupted within doubleCtrlC.
func (m *Model) ctrlC() {
	now := m.now()
	if m.turnID == "" || (!m.lastCtrlC.IsZero() && now.Sub(m.lastCtrlC) <= doubleCtrlC) {
		m.quitting = true
		return
	}
	m.lastCtrlC = now
	if m.interrupt() {
		m.notice = "interrupting · press Ctrl-C again to quit"
	}
}

// expand shows a folded diff whole: the approval box's in place, or else
// the last one the transcript folded, printed again in full.
func (m *Model) expand() {
	if m.pause != nil && m.pause.diff != "" {
		m.expanded = !m.expanded
		return
	}
	if m.folded == "" {
		m.notice = "no folded diff to show"
		return
	}
	m.commit(colorDiff(m.folded, m.styles()))
	m.folded = ""
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
	m.interrupt()
}

// interrupt interrupts the running turn. The queue then waits: what was
// queued behind an interrupted turn starts only when the user sends or
// confirms.
func (m *Model) interrupt() bool {
	ctx, cancel := m.callCtx()
	defer cancel()
	if err := m.be.Interrupt(ctx, m.thread.ID, m.turnID); err != nil {
		m.fail("interrupt", err)
		return false
	}
	m.status = statusInterrupting
	m.held = len(m.queued) > 0 || m.held
	return true
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
		m.remember(text)
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
		if m.turnID == "" && len(m.queued) > 0 {
			// Confirms the queue an interrupt held.
			m.held = false
			m.startQueued()
		}
		return
	}
	m.input.Reset()
	m.remember(text)
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
	// Sending releases a queue an interrupt held: it runs after this.
	m.held = false
	m.start(ctx, text)
}

// start runs text as a new turn; while another client's turn runs on the
// thread, the backend queues it.
func (m *Model) start(ctx context.Context, text string) {
	if _, err := m.startTurn(ctx, text); err != nil {
		if errors.Is(err, ErrBusy) {
			if err := m.queueTurn(ctx, text); err != nil {
				m.fail("queue", err)
			}
			return
		}
		m.fail("start", err)
		return
	}
	m.status = statusRunning
	m.used = true
}

// startQueued starts the first queued text as the next turn.
func (m *Model) startQueued() {
	if len(m.queued) == 0 || m.held || m.turnID != "" {
		return
	}
	text := m.queued[0]
	m.queued = m.queued[1:]
	ctx, cancel := m.callCtx()
	defer cancel()
	m.start(ctx, text)
}

// tab queues the input line as the next turn (or starts it when idle).
func (m *Model) tab() {
	text := strings.TrimSpace(m.input.Value())
	if text == "" || strings.HasPrefix(text, "/") {
		return
	}
	m.input.Reset()
	m.remember(text)
	ctx, cancel := m.callCtx()
	defer cancel()
	m.queue(ctx, text)
}

// queue keeps text as a next turn while one runs, in the chat: it starts
// when the running turn completes, and waits when that turn is
// interrupted (so Esc never sets off what was queued behind it). On an
// idle thread it starts at once.
func (m *Model) queue(ctx context.Context, text string) {
	if m.turnID != "" {
		m.queued = append(m.queued, text)
		return
	}
	m.held = false
	m.start(ctx, text)
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

func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}
