package tui

import (
	"context"
	"errors"
	"fmt"
	"io"

	tea "charm.land/bubbletea/v2"
)

// Run runs the chat on a terminal (in, out) until the user quits or ctx is
// done. The caller owns the backend and closes it afterwards, which
// interrupts a turn still running.
func Run(ctx context.Context, be Backend, opts Options, in io.Reader, out io.Writer) error {
	m, err := New(ctx, be, opts)
	if err != nil {
		return err
	}
	defer m.Close()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", err)
	}
	if hint := m.ResumeHint(); hint != "" {
		fmt.Fprintln(out, hint)
	}
	return nil
}

// ResumeHint is the line printed as the chat ends: the command that
// resumes its thread, or "" when the thread has no turns.
func (m *Model) ResumeHint() string {
	if !m.used || m.thread.ID == "" {
		return ""
	}
	cmd := m.opts.Command
	if cmd == "" {
		cmd = "rein"
	}
	return fmt.Sprintf("To resume this thread: %s chat --thread %s", cmd, m.thread.ID)
}
