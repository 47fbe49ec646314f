package tui

import (
	"strings"

	"charm.land/glamour/v2"
)

// maxMarkdown is the longest answer rendered as markdown.
const maxMarkdown = 64 << 10

// markdown renders answers with glamour, keeping one renderer per width.
type markdown struct {
	width int
	r     *glamour.TermRenderer
}

// render returns text rendered as markdown for the width, or the text
// itself when it cannot be rendered (the answer matters more than its
// styling).
func (md *markdown) render(text string, width int) string {
	if len(text) > maxMarkdown {
		// Rendering would hold up the screen for seconds; a long answer
		// reads well enough wrapped.
		return wrap(printable(text), width)
	}
	if md.r == nil || md.width != width {
		r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(max(20, width-4)))
		if err != nil {
			return wrap(text, width)
		}
		md.r, md.width = r, width
	}
	// What the model wrote is shown, never obeyed (printable).
	out, err := md.r.Render(printable(text))
	if err != nil {
		return wrap(text, width)
	}
	return strings.Trim(out, "\n")
}
