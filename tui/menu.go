package tui

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/sandbox"
)

// Bounds of the @ path completion: the walk of the workspace stops after
// so many entries or so long, and its list is reused for a while, so a key
// press never waits on a large tree.
const (
	maxWalkEntries = 20000
	walkTimeout    = 300 * time.Millisecond
	walkReuse      = 30 * time.Second
	menuRows       = 8
)

// commandInfo is a slash command and what it does, for the menu and /help.
type commandInfo struct{ name, args, help string }

// commands are the chat's slash commands, in the order the menu lists them.
var commands = []commandInfo{
	{"/help", "", "keys and commands"},
	{"/model", "[NAME]", "switch the thread's model (a picker of the configured ones)"},
	{"/diff", "", "what this thread changed in the workspace"},
	{"/undo", "", "revert the files the last turn that changed files wrote"},
	{"/cost", "", "tokens and cost of this thread"},
	{"/mcp", "", "MCP servers and their tools"},
	{"/init", "", "write an AGENTS.md for this workspace (a turn)"},
	{"/compact", "", "compact the thread's context"},
	{"/schema", "FILE|off", "answer the next turns as JSON matching the JSON Schema in FILE"},
	{"/clear", "", "start a new thread, the screen cleared"},
	{"/new", "", "start a new thread"},
	{"/threads", "", "this workspace's threads"},
	{"/resume", "ID", "continue a thread (a unique prefix of its id will do)"},
	{"/quit", "", "quit"},
}

// menu is the completion menu under the input line.
type menu struct {
	// kind is '/' (commands), '@' (workspace paths), 'm' (models) or
	// 't' (threads).
	kind  byte
	items []menuItem
	sel   int
	// start is where, in the input's current line, the completed word
	// begins (the @ of a path).
	start int
}

type menuItem struct{ value, detail string }

// pathCache is the last listing of the workspace for @.
type pathCache struct {
	at    time.Time
	paths []string
	// cut says the walk stopped at its bound.
	cut bool
}

// updateMenu opens, filters or closes the menu after the input changed:
// a line that is only "/word" lists the commands it begins, and a word
// "@frag" before the cursor lists the workspace paths that contain frag.
func (m *Model) updateMenu() {
	if m.menu != nil && (m.menu.kind == 'm' || m.menu.kind == 't') {
		return
	}
	m.menu = nil
	if m.pause != nil {
		return
	}
	v := m.input.Value()
	if strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " \n") {
		var items []menuItem
		for _, c := range commands {
			if strings.HasPrefix(c.name, v) {
				items = append(items, menuItem{c.name, c.help})
			}
		}
		if len(items) > 0 {
			m.menu = &menu{kind: '/', items: items}
		}
		return
	}
	lines := strings.Split(v, "\n")
	row := min(m.input.Line(), len(lines)-1)
	line := []rune(lines[row])
	col := min(m.input.Column(), len(line))
	start := col
	for start > 0 && !isSpace(line[start-1]) {
		start--
	}
	word := string(line[start:col])
	if !strings.HasPrefix(word, "@") || m.opts.Workspace == nil {
		return
	}
	items := m.paths(word[1:])
	if len(items) > 0 {
		m.menu = &menu{kind: '@', items: items, start: start}
	}
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }

// paths lists the workspace paths that contain frag, base names that
// begin with it first, at most menuRows*4.
func (m *Model) paths(frag string) []menuItem {
	if (m.walked == nil || m.now().Sub(m.walked.at) > walkReuse) && !m.walking {
		// Listed off the key's path; the menu opens (or updates) when
		// the listing arrives, and an older listing serves meanwhile.
		m.walking = true
		m.later = append(m.later, m.walkCmd())
	}
	if m.walked == nil {
		return nil
	}
	frag = strings.ToLower(frag)
	var first, rest []menuItem
	for _, p := range m.walked.paths {
		lp := strings.ToLower(p)
		switch {
		case strings.HasPrefix(strings.ToLower(path.Base(strings.TrimSuffix(p, "/"))), frag):
			first = append(first, menuItem{value: p})
		case strings.Contains(lp, frag):
			rest = append(rest, menuItem{value: p})
		}
		if len(first) >= menuRows*4 {
			break
		}
	}
	out := append(first, rest...)
	return out[:min(len(out), menuRows*4)]
}

// walkedMsg carries a listing of the workspace.
type walkedMsg struct{ c *pathCache }

// walkCmd lists the workspace on the command's goroutine, which ends when
// the bounded walk does.
func (m *Model) walkCmd() tea.Cmd {
	ctx, ws, now := m.ctx, m.opts.Workspace, m.now()
	return func() tea.Msg { return walkedMsg{walkWorkspace(ctx, ws, now)} }
}

// walk lists the workspace through the sandbox, so denied files are never
// offered; directories end in a slash. Version-control and dependency
// directories are not entered.
func (m *Model) walk() *pathCache {
	return walkWorkspace(m.ctx, m.opts.Workspace, m.now())
}

// walkWorkspace is walk without the model, safe on any goroutine.
func walkWorkspace(ctx context.Context, ws *sandbox.Workspace, now time.Time) *pathCache {
	c := &pathCache{at: now}
	ctx, cancel := context.WithTimeout(ctx, walkTimeout)
	defer cancel()
	n := 0
	err := ws.Walk(ctx, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if n++; n > maxWalkEntries {
			c.cut = true
			return fs.SkipAll
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__":
				return fs.SkipDir
			}
			c.paths = append(c.paths, p+"/")
			return nil
		}
		c.paths = append(c.paths, p)
		return nil
	})
	if err != nil {
		c.cut = true
	}
	slices.Sort(c.paths)
	return c
}

// menuKey handles a key while the menu is open; it reports whether it
// took the key.
func (m *Model) menuKey(k string) bool {
	mn := m.menu
	if mn == nil {
		return false
	}
	switch k {
	case "up", "ctrl+p":
		mn.sel = (mn.sel - 1 + len(mn.items)) % len(mn.items)
	case "down", "ctrl+n":
		mn.sel = (mn.sel + 1) % len(mn.items)
	case "esc":
		m.menu = nil
	case "tab":
		m.accept(false)
	case "enter":
		m.accept(true)
	default:
		return false
	}
	return true
}

// accept puts the selected item in the input line; with run, a command
// that needs no argument runs at once, and a model is switched to.
func (m *Model) accept(run bool) {
	mn := m.menu
	m.menu = nil
	it := mn.items[mn.sel]
	switch mn.kind {
	case '/':
		info := commandNamed(it.value)
		if run && (info.args == "" || strings.HasPrefix(info.args, "[")) {
			m.input.Reset()
			m.command(it.value)
			return
		}
		m.setInput(it.value + " ")
	case 'm':
		m.switchModel(it.value)
	case 't':
		m.command("/resume " + it.value)
	case '@':
		lines := strings.Split(m.input.Value(), "\n")
		row := min(m.input.Line(), len(lines)-1)
		line := []rune(lines[row])
		col := min(m.input.Column(), len(line))
		repl := "@" + it.value
		if !strings.HasSuffix(it.value, "/") {
			repl += " "
		}
		lines[row] = string(line[:mn.start]) + repl + string(line[col:])
		m.input.SetValue(strings.Join(lines, "\n"))
		// SetValue leaves the cursor at the end; put it after the path.
		m.input.MoveToBegin()
		for range row {
			m.input.CursorDown()
		}
		m.input.SetCursorColumn(mn.start + len([]rune(repl)))
		if strings.HasSuffix(it.value, "/") {
			// A directory: go on completing inside it.
			m.updateMenu()
		}
	}
}

func commandNamed(name string) commandInfo {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return commandInfo{name: name}
}

// render draws the menu: its rows around the selection, the selection
// marked.
func (mn *menu) render(s styles, width int) string {
	top := max(0, min(mn.sel-menuRows/2, len(mn.items)-menuRows))
	end := min(len(mn.items), top+menuRows)
	var b strings.Builder
	for i := top; i < end; i++ {
		it := mn.items[i]
		line := "  " + it.value
		if it.detail != "" {
			line = fmt.Sprintf("  %-10s %s", it.value, it.detail)
		}
		line = shorten(line, max(10, width-2))
		if i == mn.sel {
			line = s.selected.Render("›" + line[1:])
		} else {
			line = s.dim.Render(line)
		}
		if i > top {
			b.WriteString("\n")
		}
		b.WriteString(line)
	}
	if len(mn.items) > end-top {
		b.WriteString(s.dim.Render(fmt.Sprintf("\n  %d of %d · ↑↓ select · tab complete · enter choose · esc close", mn.sel+1, len(mn.items))))
	}
	return b.String()
}
