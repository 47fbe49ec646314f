package cli

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/event"
)

// subagent shows a sub-agent's progress under the task call that runs it,
// indented by its depth: its tool calls, their results, and its end with
// its own rounds, tokens, cost and thread id. Its pauses are shown by the waiter that
// answers them.
func (h *human) subagent(e event.Event) {
	s, depth := e.Sub, e.Depth
	for s != nil && s.Type == event.Subagent && s.Sub != nil {
		s, depth = s.Sub, s.Depth
	}
	if s == nil {
		return
	}
	pad := strings.Repeat("  │ ", max(depth, 1))
	switch s.Type {
	case event.ToolStarted:
		h.writeLine(fmt.Sprintf("%s%s %-10s %s  %s", pad, h.bold("▸"), s.Name, summarizeArgs(s.Args, 50), h.dim(h.at(s.Time))))
	case event.Result:
		mark := "✓"
		if s.Status != "ok" && s.Status != "pending" {
			mark = "✗"
		}
		h.writeLine(fmt.Sprintf("%s%s %-10s %s  %s", pad, h.bold(mark), s.Name, h.dim(fmt.Sprintf("%4.0f ms", s.Duration)), summarizeResult(s.Content, 60)))
	case event.Warning:
		h.writeLine(pad + h.dim("! "+s.Content))
	case event.TurnCompleted:
		if t := s.Turn; t != nil {
			parts := []string{"sub-agent " + string(t.Status), plural(t.Rounds, "round"), fmt.Sprintf("%d tokens", t.Usage.Total())}
			if t.Cost > 0 {
				parts = append(parts, fmt.Sprintf("$%.4f", t.Cost))
			}
			if s.ThreadID != "" {
				// rein trace THREAD shows the sub-agent's own turn.
				parts = append(parts, s.ThreadID)
			}
			h.writeLine(pad + h.dim(strings.Join(parts, " · ")))
		}
	}
}
