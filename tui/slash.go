package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// model switches the thread's model: to name when given, else through a
// picker of the configured models.
func (m *Model) model(name string) {
	s := m.styles()
	if m.opts.SetModel == nil {
		m.commit(s.warn.Render("/model: this chat cannot switch models; start it with --model"))
		return
	}
	if name != "" {
		m.switchModel(name)
		return
	}
	if len(m.opts.Models) == 0 {
		m.commit(s.warn.Render("/model: no models are configured; /model PROVIDER:MODEL switches to one by name"))
		return
	}
	mn := &menu{kind: 'm'}
	for i, id := range m.opts.Models {
		detail := ""
		if id == m.opts.Model {
			detail, mn.sel = "(current)", i
		}
		mn.items = append(mn.items, menuItem{value: id, detail: detail})
	}
	m.menu = mn
	m.notice = "choose a model: ↑↓ then enter · esc to keep " + orDash(m.opts.Model)
}

// switchModel makes name the model of the thread's next turns.
func (m *Model) switchModel(name string) {
	s := m.styles()
	if m.busy("/model") {
		return
	}
	ctx, cancel := m.callCtx()
	defer cancel()
	if err := m.opts.SetModel(ctx, m.thread.ID, name); err != nil {
		m.fail("/model", err)
		return
	}
	m.opts.Model = name
	m.commit(s.dim.Render("model: " + name + " (the thread's next turns)"))
}

// cost commits the thread's tokens and cost.
func (m *Model) cost() {
	u, cost := m.usage.total()
	var b strings.Builder
	fmt.Fprintf(&b, "thread %s · %s\n", m.thread.ID, orDash(m.opts.Model))
	fmt.Fprintf(&b, "  input      %d tokens", u.InputTokens)
	if u.CachedInputTokens > 0 {
		fmt.Fprintf(&b, " (%d from the cache)", u.CachedInputTokens)
	}
	fmt.Fprintf(&b, "\n  output     %d tokens", u.OutputTokens)
	if u.ReasoningTokens > 0 {
		fmt.Fprintf(&b, " (%d reasoning)", u.ReasoningTokens)
	}
	fmt.Fprintf(&b, "\n  cost       $%.4f", cost)
	if m.usage.context != "" {
		fmt.Fprintf(&b, "\n  context    %s", m.usage.context)
	}
	m.commit(b.String())
}

// diff commits what the thread changed in the workspace.
func (m *Model) diff() {
	s := m.styles()
	if m.opts.Changes == nil {
		m.commit(s.warn.Render("/diff is not available in this chat"))
		return
	}
	ctx, cancel := m.callCtx()
	defer cancel()
	d, err := m.opts.Changes(ctx, m.thread.ID)
	if err != nil {
		m.fail("/diff", err)
		return
	}
	if strings.TrimSpace(d) == "" {
		m.commit(s.dim.Render("this thread has changed no files"))
		return
	}
	m.commit(colorDiff(d, s))
}

// undo reverts the files the thread's last file-changing turn wrote;
// arg "force" restores over files changed since.
func (m *Model) undo(arg string) {
	s := m.styles()
	if m.busy("/undo") {
		return
	}
	if m.opts.Undo == nil {
		m.commit(s.warn.Render("/undo is not available yet: this build's runtime keeps no snapshots of what turns wrote"))
		return
	}
	ctx, cancel := m.callCtx()
	defer cancel()
	msg, err := m.opts.Undo(ctx, m.thread.ID, arg == "force")
	if errors.Is(err, ErrChangedSince) {
		m.fail("/undo", err)
		m.commit(s.dim.Render("  nothing was restored; /undo force restores over those files"))
		return
	}
	if err != nil {
		m.fail("/undo", err)
		return
	}
	m.commit(s.ok.Render("↶ ") + printable(msg))
}

// threadID resolves a thread id or a unique prefix of one among the
// backend's threads; an id no listed thread has is passed on as it is.
func (m *Model) threadID(ctx context.Context, arg string) (string, error) {
	ts, err := m.be.Threads(ctx)
	if err != nil {
		return arg, nil
	}
	var found []string
	for _, t := range ts {
		if t.ID == arg {
			return arg, nil
		}
		if strings.HasPrefix(t.ID, arg) || strings.HasPrefix(strings.TrimPrefix(t.ID, "thread_"), arg) {
			found = append(found, t.ID)
		}
	}
	switch len(found) {
	case 0:
		return arg, nil
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("%s is the start of %d threads (%s); give more of the id", arg, len(found), strings.Join(found[:min(3, len(found))], ", "))
}

// pickThread opens a menu of this workspace's threads, most recent first,
// with their first message and age; Enter resumes the one chosen.
func (m *Model) pickThread() {
	s := m.styles()
	ts, err := m.workspaceThreads(false)
	if err != nil {
		m.fail("/resume", err)
		return
	}
	mn := &menu{kind: 't'}
	for _, t := range ts {
		if t.ID == m.thread.ID {
			continue
		}
		mn.items = append(mn.items, menuItem{value: t.ID, detail: ago(m.now().Sub(t.Updated)) + " · " + shorten(oneLine(printable(orDash(t.Title))), 50)})
	}
	if len(mn.items) == 0 {
		m.commit(s.dim.Render("no other threads in this workspace; /threads all lists every thread"))
		return
	}
	m.menu = mn
	m.notice = "choose a thread: ↑↓ then enter · esc to stay"
}
