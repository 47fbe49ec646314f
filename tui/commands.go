package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
)

// helpKeys lists the keys; /help adds the commands.
const helpKeys = `keys
  enter        send; while a turn runs, steer it (read before its next model call)
  shift+enter  a line break (also ctrl+j, alt+enter); a paste keeps its lines
  up, down     earlier inputs of this workspace
  tab          queue as the next turn
  esc          interrupt the running turn (twice within 1 s while a tool runs);
               what was queued waits until you send or press enter
  ctrl+c       interrupt the running turn; again within 2 s, or when idle, quit
  ctrl+d       quit (on an empty line)
  ctrl+o       show a folded diff whole
  /            commands      @  complete a workspace path`

// helpText lists the keys and the commands.
func helpText() string {
	var b strings.Builder
	b.WriteString(helpKeys + "\ncommands")
	for _, c := range commands {
		fmt.Fprintf(&b, "\n  %-16s %s", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	return b.String()
}

// initPrompt is the request /init sends as a turn.
const initPrompt = "Write an AGENTS.md file at the root of this workspace for coding agents working here: " +
	"what the project is, how it is laid out, how to build, test and lint it, and the conventions its code follows. " +
	"Look at the files first (README, build files, CI config, a few sources); keep it short and concrete. " +
	"If an AGENTS.md exists, improve it instead of starting over."

// command runs a slash command.
func (m *Model) command(line string) {
	s := m.styles()
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help", "/?":
		m.commit(s.dim.Render(helpText()))
	case "/model":
		m.model(arg)
	case "/cost":
		m.cost()
	case "/diff":
		m.diff()
	case "/undo":
		m.undo(arg)
	case "/mcp":
		if m.opts.MCP == nil {
			m.commit(s.dim.Render("no MCP servers are configured (rein mcp add NAME -- COMMAND adds one)"))
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		m.commit(printable(m.opts.MCP(ctx)))
	case "/init":
		if m.turnID != "" {
			m.commit(s.warn.Render("/init: a turn is running; wait for it, or queue /init after it is done"))
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		m.held = false
		m.start(ctx, initPrompt)
	case "/clear":
		if m.busy("/clear") {
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		t, err := m.be.NewThread(ctx)
		if err != nil {
			m.fail("/clear", err)
			return
		}
		m.clear = true
		m.switchTo(t, nil)
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
		m.listThreads(arg == "all" || arg == "--all")
	case "/resume":
		if arg == "" {
			m.pickThread()
			return
		}
		if m.busy("/resume") {
			return
		}
		ctx, cancel := m.callCtx()
		defer cancel()
		id, err := m.threadID(ctx, arg)
		if err != nil {
			m.commit(s.warn.Render("/resume: " + err.Error()))
			return
		}
		t, history, err := m.be.Resume(ctx, id)
		if err != nil {
			if errors.Is(err, ErrNotStored) {
				m.commit(s.warn.Render(fmt.Sprintf("no thread %s here: threads are not stored yet (the store has not landed), so only this chat's threads can be resumed; /threads lists them", arg)))
				return
			}
			m.fail("/resume", err)
			return
		}
		m.switchTo(t, history)
	case "/schema":
		m.schemaCommand(arg)
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
	m.pause, m.steers, m.queued, m.held = nil, nil, nil, false
	m.turnID, m.round, m.last, m.status = "", 0, "", statusIdle
	m.usage = usageTally{before: t.Usage, beforeCost: t.Cost}
	if t.Model != "" {
		// The thread's turns run with its own model.
		m.opts.Model = t.Model
	}
	m.used = t.Turns > 0
	if err := m.subscribe(); err != nil {
		m.fail("subscribe", err)
		return
	}
	m.commit(m.styles().dim.Render("── thread " + t.ID))
	m.showHistory(history)
}

// listThreads commits the threads of this workspace (all of the
// backend's with all), the current one marked.
func (m *Model) listThreads(all bool) {
	s := m.styles()
	ts, err := m.workspaceThreads(all)
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
		fmt.Fprintf(&b, "%s %s  %s · %s%s  %s", mark, t.ID, plural(t.Turns, "turn"), ago(m.now().Sub(t.Updated)), state, orDash(printable(t.Title)))
	}
	m.commit(b.String())
}

// workspaceThreads lists the backend's threads of this workspace (all of
// them with all), most recent first.
func (m *Model) workspaceThreads(all bool) ([]ThreadInfo, error) {
	ctx, cancel := m.callCtx()
	defer cancel()
	ts, err := m.be.Threads(ctx)
	if err != nil {
		return nil, err
	}
	dir := m.opts.Dir
	if dir == "" && m.opts.Workspace != nil {
		dir = m.opts.Workspace.Dir()
	}
	if !all && dir != "" {
		ts = slices.DeleteFunc(slices.Clone(ts), func(t ThreadInfo) bool { return t.Workspace != "" && t.Workspace != dir })
	}
	return ts, nil
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
