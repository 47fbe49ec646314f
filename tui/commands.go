package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
)

// helpText lists the keys and commands.
const helpText = `keys
  enter    send; while a turn runs, steer it (read before its next model call)
  tab      queue as the next turn
  esc      interrupt the running turn (twice within 1 s while a tool runs)
  ctrl+c   quit
commands
  /new          start a new thread
  /threads      list threads
  /resume ID    continue a thread
  /compact      compact the thread's context
  /help         this help
  /quit         quit`

// command runs a slash command.
func (m *Model) command(line string) {
	s := m.styles()
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help", "/?":
		m.commit(s.dim.Render(helpText))
	case "/quit", "/exit":
		m.quitting = true
	case "/new":
		if m.busy("/new") {
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		t, err := m.be.NewThread(ctx)
		if err != nil {
			m.fail("/new", err)
			return
		}
		m.switchTo(t, nil)
	case "/threads":
		m.listThreads()
	case "/resume":
		if arg == "" {
			m.commit(s.warn.Render("/resume needs a thread id; /threads lists them"))
			return
		}
		if m.busy("/resume") {
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		t, history, err := m.be.Resume(ctx, arg)
		if err != nil {
			if errors.Is(err, ErrNotStored) {
				m.commit(s.warn.Render(fmt.Sprintf("no thread %s here: threads are not stored yet (the store has not landed), so only this chat's threads can be resumed; /threads lists them", arg)))
				return
			}
			m.fail("/resume", err)
			return
		}
		m.switchTo(t, history)
	case "/compact":
		if m.busy("/compact") {
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		err := m.be.Compact(ctx, m.thread.ID)
		switch {
		case errors.Is(err, ErrNoCompaction):
			m.commit(s.warn.Render("/compact is not available yet: the chat's engine has no context window configured"))
		case err != nil:
			m.fail("/compact", err)
		default:
			m.status = statusRunning
			m.commit(s.dim.Render("compacting: the model writes a handoff summary the next turns start from"))
		}
	default:
		m.commit(s.warn.Render(fmt.Sprintf("unknown command %s; /help lists the commands", name)))
	}
}

// busy refuses a thread switch while a turn runs: its pauses would have no
// one to answer them.
func (m *Model) busy(what string) bool {
	if m.turnID == "" {
		return false
	}
	m.commit(m.styles().warn.Render(what + ": a turn is running; wait for it, or press Esc to interrupt it first"))
	return true
}

// switchTo makes t the chat's thread.
func (m *Model) switchTo(t ThreadInfo, history []llm.Item) {
	m.thread = t
	m.live.reset()
	m.pause, m.steers, m.queued = nil, nil, nil
	m.turnID, m.round, m.last, m.status = "", 0, "", statusIdle
	m.usage = usageTally{}
	if err := m.subscribe(); err != nil {
		m.fail("subscribe", err)
		return
	}
	m.commit(m.styles().dim.Render("── thread " + t.ID))
	m.showHistory(history)
}

// listThreads commits the backend's threads, the current one marked.
func (m *Model) listThreads() {
	s := m.styles()
	ctx, cancel := m.callCtx()
	defer cancel()
	ts, err := m.be.Threads(ctx)
	if err != nil {
		m.fail("/threads", err)
		return
	}
	if len(ts) == 0 {
		m.commit(s.dim.Render("no threads"))
		return
	}
	var b strings.Builder
	for i, t := range ts {
		mark := " "
		if t.ID == m.thread.ID {
			mark = "*"
		}
		state := ""
		if t.Running {
			state = " · running"
		}
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s %s  %s · %s%s  %s", mark, t.ID, plural(t.Turns, "turn"), ago(m.now().Sub(t.Updated)), state, orDash(t.Title))
	}
	m.commit(b.String())
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ago says how long ago something happened, roughly.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
