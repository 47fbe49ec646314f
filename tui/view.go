package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/reinhq/rein/tool"
)

// styles are the chat's text styles; the program downsamples colours to
// what the terminal supports.
type styles struct {
	dim, bold, user, ok, bad, warn, running lipgloss.Style
	card, footer, selected                  lipgloss.Style
	// add, del and hunk colour a diff's lines.
	add, del, hunk lipgloss.Style
}

func (m *Model) styles() styles {
	return styles{
		dim:      lipgloss.NewStyle().Faint(true),
		bold:     lipgloss.NewStyle().Bold(true),
		user:     lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		ok:       lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		bad:      lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		warn:     lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		running:  lipgloss.NewStyle().Foreground(lipgloss.Color("14")),
		card:     lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("11")).Padding(0, 1),
		footer:   lipgloss.NewStyle().Faint(true),
		selected: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("14")),
		add:      lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		del:      lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		hunk:     lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
	}
}

// View draws what is still changing: the live round, pending steers and
// queued turns, a pause card, the input line and the footer.
func (m *Model) View() tea.View {
	s := m.styles()
	var blocks []string
	if live := m.liveView(s); live != "" {
		blocks = append(blocks, live)
	}
	for _, p := range m.steers {
		blocks = append(blocks, s.dim.Render("  ↳ steer, read before the next model call: ")+shorten(oneLine(p.text), max(10, m.width-46)))
	}
	for i, t := range m.queued {
		blocks = append(blocks, s.dim.Render(fmt.Sprintf("  ⏵ queued %d: ", i+1))+shorten(oneLine(t), max(10, m.width-16)))
	}
	if m.pause != nil {
		blocks = append(blocks, m.pause.render(s, m.width, m.expanded))
	}
	if m.notice != "" {
		blocks = append(blocks, s.warn.Render(m.notice))
	}
	blocks = append(blocks, m.inputView())
	if m.menu != nil {
		blocks = append(blocks, m.menu.render(s, m.width))
	}
	blocks = append(blocks, m.footer(s))
	return tea.NewView(strings.Join(blocks, "\n"))
}

// emptyInputView is the drawing of the empty input box (its prompt and
// placeholder) and the box's size and focus it was drawn at.
type emptyInputView struct {
	ok            bool
	width, height int
	focused       bool
	text          string
}

// inputView draws the input box. The empty box is drawn once per size and
// focus: textarea wraps its placeholder at every draw, which cost a
// quarter of a millisecond a frame while an answer streams.
func (m *Model) inputView() string {
	if m.input.LineCount() != 1 || m.input.Length() != 0 {
		return m.input.View()
	}
	v := m.emptyInput
	if v.ok && v.width == m.input.Width() && v.height == m.input.Height() && v.focused == m.input.Focused() {
		return v.text
	}
	m.emptyInput = emptyInputView{ok: true, width: m.input.Width(), height: m.input.Height(), focused: m.input.Focused(), text: m.input.View()}
	return m.emptyInput.text
}

// liveView draws the streaming round: thinking as one line, the text so far
// (its last lines, so the view never outgrows the screen) and the cards.
func (m *Model) liveView(s styles) string {
	var parts []string
	if t := strings.TrimSpace(m.live.thinking.String()); t != "" && m.live.text.Len() == 0 {
		parts = append(parts, s.dim.Render(thinkingLine(t, m.width)))
	}
	if t := strings.TrimSpace(m.live.text.String()); t != "" {
		room := max(3, m.height-8-len(m.live.cards))
		parts = append(parts, m.live.textView(t, m.width, room, s))
	}
	now := m.now()
	for _, c := range m.live.cards {
		parts = append(parts, c.render(now, s, m.width))
	}
	return strings.Join(parts, "\n")
}

// footer is the status line: what the thread is doing, the model, tokens,
// cost, context used, and the keys that matter now.
func (m *Model) footer(s styles) string {
	u, cost := m.usage.total()
	ctx := m.usage.context
	if ctx == "" {
		ctx = "—"
	}
	// The status comes first: a narrow terminal cuts the end of the line.
	fields := []string{
		m.statusText(),
		orDash(m.opts.Model),
		compact(u.Total()) + " tokens",
		fmt.Sprintf("$%.4f", cost),
		"ctx " + ctx,
	}
	if n := len(m.queued); n > 0 {
		fields = append(fields, fmt.Sprintf("%d queued", n))
	}
	keys := "enter send · shift+enter newline · / commands · ctrl+c quit"
	switch {
	case m.turnID == "" && m.held && len(m.queued) > 0:
		keys = "enter on an empty line sends the queue · ctrl+c quit"
	case m.pause != nil && m.pause.kind == tool.PauseApproval:
		keys = "y/a/n answer · esc interrupt"
	case m.pause != nil:
		keys = "enter answer · esc interrupt"
	case m.turnID != "":
		keys = "enter steer · tab queue · esc interrupt"
	}
	return s.footer.Render(shorten(strings.Join(fields, " · ")+"  │  "+keys, max(20, m.width-1)))
}

// statusText is the thread's state for the footer.
func (m *Model) statusText() string {
	switch m.status {
	case statusRunning:
		elapsed := ""
		if !m.turnStart.IsZero() {
			elapsed = fmt.Sprintf(" · %ds", int(m.now().Sub(m.turnStart).Seconds()))
		}
		if m.round > 0 {
			return fmt.Sprintf("running round %d%s", m.round, elapsed)
		}
		return "running" + elapsed
	case statusPaused:
		return "paused"
	case statusInterrupting:
		return "interrupting…"
	}
	if m.last != "" && m.last != "completed" {
		return m.last
	}
	return "idle"
}

// tail returns about the last n bytes of s, starting at a line or word
// boundary (never inside a character).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexAny(s, "\n "); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// lastRunes returns how many bytes the last n characters of s take.
func lastRunes(s string, n int) int {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return len(s) - i
}

// wrap wraps text to width columns, keeping its line breaks; what would
// act on the terminal or hide how the text reads is made visible first
// (printable), so every wrapped text is shown safely.
func wrap(s string, width int) string {
	return lipgloss.Wrap(printable(s), max(10, width-1), "")
}

// shorten cuts s to at most n columns, ending with an ellipsis when cut.
func shorten(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, max(1, n), "…")
}

func visibleWidth(s string) int { return ansi.StringWidth(s) }

func stripANSI(s string) string { return ansi.Strip(s) }

// compact writes a count with a k or M suffix.
func compact(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// oneLine folds s onto one line, its runs of white space made one space.
// oneLine is s on one line, its runs of space one space, what would act
// on the terminal or hide how it reads made visible (printable).
func oneLine(s string) string {
	return strings.Join(strings.Fields(printable(s)), " ")
}
