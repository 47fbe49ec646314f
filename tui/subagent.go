package tui

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/event"
)

// subagent commits what a sub-agent (a child turn the task tool runs) did,
// indented under the parent's call by its depth: the tools it ran, their
// results, its warnings, and how it ended with its own tokens, cost and
// thread id.
// Its streamed text stays out: the child's answer is the call's result.
func (m *Model) subagent(e event.Event) {
	sub, depth := e.Sub, e.Depth
	for sub != nil && sub.Type == event.Subagent && sub.Sub != nil {
		sub, depth = sub.Sub, sub.Depth
	}
	if sub == nil {
		return
	}
	s := m.styles()
	pad := strings.Repeat("  │ ", max(depth, 1))
	width := max(20, m.width-len(pad)-16)
	switch sub.Type {
	case event.ToolStarted:
		m.commit(s.dim.Render(pad+"▸ "+oneLine(sub.Name)) + " " + summarizeArgs(sub.Args, width))
	case event.Result:
		mark := "✓"
		if sub.Status != "ok" && sub.Status != "pending" {
			mark = "✗"
		}
		m.commit(s.dim.Render(fmt.Sprintf("%s%s %s: %s", pad, mark, oneLine(sub.Name), shorten(oneLine(withoutDirectives(sub.Content)), width))))
	case event.Warning:
		m.commit(s.warn.Render(pad + "! " + printable(sub.Content)))
	case event.TurnCompleted:
		if t := sub.Turn; t != nil {
			line := fmt.Sprintf("%ssub-agent %s · %d rounds · %d tokens", pad, t.Status, t.Rounds, t.Usage.Total())
			if t.Cost > 0 {
				line += fmt.Sprintf(" · $%.4f", t.Cost)
			}
			if sub.ThreadID != "" {
				// /trace or rein trace THREAD shows the sub-agent's turn.
				line += " · " + sub.ThreadID
			}
			m.commit(s.dim.Render(line))
		}
	}
}
