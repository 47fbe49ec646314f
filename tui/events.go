package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// liveRound is the round streaming now: its text, its thinking and the
// cards of its calls. It is committed when the round completes.
type liveRound struct {
	text     strings.Builder
	thinking strings.Builder
	cards    []*card
	// view is the text as last drawn (textView).
	view liveText
}

// liveText is the live text's drawing and what it was drawn from: the
// text's length (it only grows until the round is reset), the width and
// the rows it had.
type liveText struct {
	ok             bool
	n, width, rows int
	text           string
}

// textView draws the live text t (the round's text, trimmed) in at most
// rows lines of width columns: its end only, since wrapping all of a long
// answer at every frame would make each key press wait on it. The drawing
// is kept until the text grows or the screen changes, so a key press, a
// tick or a card's change redraws the screen without wrapping the answer
// again, and chunks that arrive between two frames are wrapped once.
func (r *liveRound) textView(t string, width, rows int, s styles) string {
	n := r.text.Len()
	if v := r.view; v.ok && v.n == n && v.width == width && v.rows == rows {
		return v.text
	}
	// Twice the characters the rows hold: enough lines whatever the
	// word breaks, and a quarter of the bytes an ASCII answer had wrapped
	// when this counted four bytes a character.
	lines := strings.Split(wrap(tail(t, lastRunes(t, 2*(rows+1)*width)), width), "\n") // wrap makes it printable
	if len(lines) > rows {
		lines = append([]string{s.dim.Render("…")}, lines[len(lines)-rows+1:]...)
	}
	out := strings.Join(lines, "\n")
	r.view = liveText{ok: true, n: n, width: width, rows: rows, text: out}
	return out
}

func (r *liveRound) card(id string) *card {
	for _, c := range r.cards {
		if c.id == id {
			return c
		}
	}
	return nil
}

func (r *liveRound) empty() bool {
	return r.text.Len() == 0 && r.thinking.Len() == 0 && len(r.cards) == 0
}

func (r *liveRound) reset() {
	r.text.Reset()
	r.thinking.Reset()
	r.cards = nil
	r.view = liveText{}
}

// apply updates the model with one event of the thread.
func (m *Model) apply(e event.Event) {
	if e.ThreadID != "" && e.ThreadID != m.thread.ID {
		return
	}
	s := m.styles()
	switch e.Type {
	case event.TurnStarted:
		m.turnID, m.round, m.last = e.TurnID, 0, ""
		m.turnStart = e.Time
		if m.turnStart.IsZero() {
			m.turnStart = m.now()
		}
		m.status, m.used = statusRunning, true
		m.live.reset()
	case event.RoundStarted:
		m.commitRound(event.RoleNarration, false)
		m.round = e.Round
	case event.TextDelta:
		m.live.text.WriteString(e.Delta)
	case event.ThinkingDelta:
		m.live.thinking.WriteString(e.Delta)
	case event.CallCompleted:
		if m.live.card(e.CallID) == nil {
			m.live.cards = append(m.live.cards, &card{id: e.CallID, name: e.Name, args: e.Args, state: cardWaiting})
		}
	case event.ToolStarted:
		c := m.live.card(e.CallID)
		if c == nil {
			c = &card{id: e.CallID, name: e.Name, args: e.Args}
			m.live.cards = append(m.live.cards, c)
		}
		c.state, c.started = cardRunning, e.Time
	case event.Result:
		c := m.live.card(e.CallID)
		if c == nil {
			c = &card{id: e.CallID, name: e.Name, args: e.Args}
			m.live.cards = append(m.live.cards, c)
		}
		c.finish(e.Status, e.Content, e.Duration)
		if before, ok := m.before[e.CallID]; ok {
			delete(m.before, e.CallID)
			if c.diff == "" && c.state == cardDone && c.name == "write_file" && strings.HasPrefix(e.Content, "replaced ") {
				c.diff = replacedDiff(c.args, before)
			}
		}
	case event.RoundCompleted:
		m.commitRound(e.Role, e.AnswerVisible)
	case event.ItemAdded:
		m.itemAdded(e.Item)
	case event.PauseRequested:
		m.pause = newPauseCard(e)
		m.pause.diff, m.pause.before, m.pause.known = m.propose(e.Name, e.Args)
		m.expanded = false
		m.status = statusPaused
		if c := m.live.card(e.CallID); c != nil {
			c.state = cardWaitingUser
		}
	case event.PauseResolved:
		if m.pause != nil && m.pause.callID == e.CallID {
			m.pause = nil
		}
		if m.status == statusPaused {
			m.status = statusRunning
		}
		what := "answered"
		if e.Status != "" {
			what = strings.ReplaceAll(e.Status, "_", " ")
		}
		m.commit(s.dim.Render(fmt.Sprintf("  ↳ %s %s: %s", e.Name, what, shorten(oneLine(withoutDirectives(e.Content)), max(20, m.width-20)))))
	case event.Retry:
		m.commit(s.dim.Render(fmt.Sprintf("  ↻ reconnecting %d/%d: %s", e.Attempt, e.Max, oneLine(e.Content))))
	case event.Warning:
		m.commit(s.warn.Render("  ! " + printable(e.Content)))
	case event.Usage:
		if e.Usage != nil {
			m.usage.turn, m.usage.turnCost = *e.Usage, e.Cost
		}
	case event.Context:
		m.usage.context = contextReport(e.Context)
	case event.TurnCompleted:
		m.turnCompleted(e)
	case event.Subagent:
		m.subagent(e)
	}
}

// itemAdded commits the user's own messages as the engine records them:
// the turn's input (a queued text leaves the queue here) and steered input
// (the steer is read at this point, so it leaves the pending list).
func (m *Model) itemAdded(it *llm.Item) {
	if it != nil && it.Role == llm.RoleTool {
		// A result's item follows its Result event, before the round
		// ends: write_file's diff of a file it replaced comes in its Meta.
		if r := it.Result(); r != nil {
			m.live.card(r.CallID).withMetaDiff(r)
		}
		return
	}
	if it == nil || it.Role != llm.RoleUser {
		return
	}
	text := it.Text()
	s := m.styles()
	switch it.Origin {
	case llm.OriginInput:
		// Steered input the turn did not read starts the next turn under
		// its own id; it is no longer pending.
		// (Queued texts leave the chat's queue as it starts them.)
		if i := slices.IndexFunc(m.steers, func(p pendingSteer) bool { return p.id != "" && p.id == it.ID }); i >= 0 {
			m.steers = slices.Delete(m.steers, i, i+1)
		}
		m.commit(s.user.Render("› " + printable(text)))
	case llm.OriginSteer:
		// By id: two steers of the same text are two items.
		i := slices.IndexFunc(m.steers, func(p pendingSteer) bool { return p.id != "" && p.id == it.ID })
		if i < 0 {
			i = slices.IndexFunc(m.steers, func(p pendingSteer) bool { return p.text == text })
		}
		if i >= 0 {
			m.steers = slices.Delete(m.steers, i, i+1)
		}
		m.commit(s.user.Render("› "+printable(text)) + s.dim.Render("  (steered into the turn)"))
	}
}

// commitRound commits the live round: thinking as one dim line, the text
// (the answer as markdown; narration as a dim preamble) and the cards.
func (m *Model) commitRound(role string, answerVisible bool) {
	if m.live.empty() {
		return
	}
	s := m.styles()
	var parts []string
	if t := strings.TrimSpace(m.live.thinking.String()); t != "" {
		parts = append(parts, s.dim.Render(thinkingLine(t, m.width)))
	}
	if t := strings.TrimSpace(m.live.text.String()); t != "" {
		if m.status == statusInterrupting {
			// Cut by the interrupt: shown as the fragment it is.
			parts = append(parts, s.dim.Render(wrap(t+" …", m.width)))
		} else if role == event.RoleFinish || answerVisible {
			parts = append(parts, m.md.render(t, m.width))
		} else {
			parts = append(parts, s.dim.Render(wrap(t, m.width)))
		}
	}
	for _, c := range m.live.cards {
		parts = append(parts, c.render(m.now(), s, m.width))
		if c.folded() {
			m.folded = c.diff
		}
	}
	m.commit(strings.Join(parts, "\n"))
	m.live.reset()
}

// turnCompleted ends the turn on screen: what is left of the round, a line
// saying how the turn ended when that was not a plain answer, the usage.
func (m *Model) turnCompleted(e event.Event) {
	for _, c := range m.live.cards {
		if c.state == cardRunning || c.state == cardWaiting || c.state == cardWaitingUser {
			c.state = cardAborted
		}
	}
	role := event.RoleNarration
	if e.Status == "completed" {
		role = event.RoleFinish
	}
	m.commitRound(role, false)
	s := m.styles()
	sum := e.Turn
	m.showOutput(sum)
	status := e.Status
	if sum != nil {
		status = string(sum.Status)
		if e.Usage == nil {
			m.usage.turn, m.usage.turnCost = sum.Usage, sum.Cost
		}
	}
	switch status {
	case "interrupted":
		m.commit(s.warn.Render("■ interrupted"))
	case "failed":
		msg := "■ failed"
		if sum != nil && sum.Error != "" {
			msg += ": " + sum.Error
		}
		m.commit(s.bad.Render(msg))
	case "paused":
		m.commit(s.warn.Render("■ paused: the turn waits for an answer"))
	default:
		if sum != nil && sum.StopReason == "compacted" {
			m.commit(s.dim.Render("■ compacted: the next turns start from the summary"))
		} else if sum != nil && sum.StopReason != "" && sum.StopReason != "finished" {
			m.commit(s.dim.Render("  (stopped: " + string(sum.StopReason) + ")"))
		}
	}
	m.usage.endTurn()
	m.turnID, m.round, m.pause = "", 0, nil
	m.status, m.last = statusIdle, status
	m.lastEsc = time.Time{}
	m.used = true
	if status != "completed" && len(m.queued) > 0 {
		// The queue waits for the user after a turn that did not end
		// well: an interrupt, a failure.
		m.held = true
	}
	if m.held && len(m.queued) > 0 {
		m.commit(s.dim.Render(fmt.Sprintf("  ⏸ %s waiting: Enter on an empty line sends the next, or type a message", plural(len(m.queued), "queued turn"))))
		return
	}
	m.startQueued()
}

// contextReport renders a context budget for the footer: used of the
// window, in percent, with a ~ when the numbers are estimates.
func contextReport(r *event.ContextReport) string {
	if r == nil || r.Window <= 0 {
		return ""
	}
	est := ""
	if r.Estimated {
		est = "~"
	}
	return fmt.Sprintf("%s%s/%s (%.0f%%)", est, compact(int64(r.Used)), compact(int64(r.Window)), r.Percent)
}

// thinkingLine collapses reasoning to one line: how long it was and how it
// began.
func thinkingLine(t string, width int) string {
	words := len(strings.Fields(t))
	return shorten(fmt.Sprintf("∴ thought (%d words): %s", words, oneLine(t)), max(20, width-2))
}
