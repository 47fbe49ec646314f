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
	return run(ctx, be, opts, in, out)
}

// frameRate is how often the screen may be redrawn: at 120 frames a
// second a key or a streamed word waits at most about 8 ms for its frame.
const frameRate = 120

// run is Run with more program options (tests: a window size where the
// output is no terminal).
func run(ctx context.Context, be Backend, opts Options, in io.Reader, out io.Writer, more ...tea.ProgramOption) error {
	m, err := New(ctx, be, opts)
	if err != nil {
		return err
	}
	defer m.Close()
	popts := append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(frameRate)}, more...)
	p := tea.NewProgram(m, popts...)
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
