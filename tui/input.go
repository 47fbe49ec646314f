package tui

import (
	"strings"

	binding "charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/reinhq/rein/tool"
)

// Input box bounds: it grows with its text up to maxInputRows rows and
// scrolls beyond; it takes at most maxInputContent rows of text in all, so
// a paste of a whole file still arrives whole.
const (
	maxInputRows    = 10
	maxInputContent = 20000
)

// newInput returns the multi-line input box: Enter is the chat's (send),
// Shift+Enter, Alt+Enter and Ctrl+J insert a line break, and Up and Down
// move between lines (the chat recalls history from the first and last).
func newInput(width int) textarea.Model {
	in := textarea.New()
	in.ShowLineNumbers = false
	in.Placeholder = "ask anything · / for commands · @ for files"
	in.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	in.DynamicHeight = true
	in.MinHeight = 1
	in.MaxHeight = maxInputRows
	in.MaxContentHeight = maxInputContent
	in.CharLimit = 0
	// Terminals without the kitty keyboard protocol send Shift+Enter as
	// Enter; Ctrl+J (a line feed) and Alt+Enter work in all of them.
	in.KeyMap.InsertNewline = binding.NewBinding(binding.WithKeys("shift+enter", "ctrl+j", "alt+enter"))
	// Ctrl-D is the chat's on an empty line; Delete still deletes.
	in.KeyMap.DeleteCharacterForward = binding.NewBinding(binding.WithKeys("delete"))
	st := textarea.DefaultDarkStyles()
	st.Cursor.Blink = false
	st.Focused.CursorLine = lipgloss.NewStyle()
	st.Focused.Prompt = lipgloss.NewStyle().Foreground(lipgloss.Color("12"))
	st.Focused.Placeholder = lipgloss.NewStyle().Faint(true)
	in.SetStyles(st)
	in.Focus()
	in.SetWidth(width)
	return in
}

// paste inserts pasted text whole, its line breaks kept: a bracketed paste
// arrives as one message, and CR LF or CR line ends (what terminals send)
// become line breaks.
func (m *Model) paste(p tea.PasteMsg) tea.Cmd {
	if m.pause != nil && m.pause.kind == tool.PauseApproval {
		return nil
	}
	text := strings.ReplaceAll(p.Content, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(tea.PasteMsg{Content: text})
	m.updateMenu()
	return cmd
}

// historyKey recalls an earlier input with Up on the input's first row or
// Down on its last; it reports whether it took the key.
func (m *Model) historyKey(k string) bool {
	if m.pause != nil {
		return false
	}
	info := m.input.LineInfo()
	switch k {
	case "up":
		if m.input.Line() != 0 || info.RowOffset != 0 {
			return false
		}
		text, ok := m.recall.older(m.input.Value())
		if !ok {
			return true
		}
		m.setInput(text)
		m.input.MoveToBegin()
		return true
	case "down":
		if m.input.Line() != m.input.LineCount()-1 || info.RowOffset < info.Height-1 {
			return false
		}
		text, ok := m.recall.newer()
		if !ok {
			return true
		}
		m.setInput(text)
		return true
	}
	return false
}

// setInput replaces the input's text, the cursor at its end.
func (m *Model) setInput(text string) {
	m.input.SetValue(text)
	m.input.MoveToEnd()
}

// remember adds a sent input to the history.
func (m *Model) remember(text string) {
	if err := m.opts.History.Add(text); err != nil {
		m.notice = "input history not saved: " + err.Error()
	}
	entries := m.opts.History.Entries()
	if m.opts.History == nil {
		// Kept for this chat only.
		entries = m.recall.entries
		if n := len(entries); n == 0 || entries[n-1] != text {
			entries = append(entries, text)
		}
	}
	m.recall.reset(entries)
}
