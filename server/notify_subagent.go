package server

import (
	"unicode/utf8"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/protocol"
)

// subagentContentMax bounds the text a subagent/event carries: the whole
// result goes to the parent as its call's result, not to every client.
const subagentContentMax = 2000

// subagentParams is the subagent/event of a Subagent event: the innermost
// child's event, under the parent's call, for the kinds a client shows
// (the rest, such as rounds and item events, stay in the trace).
func subagentParams(e event.Event) (protocol.SubagentEvent, bool) {
	s, depth := e.Sub, e.Depth
	for s != nil && s.Type == event.Subagent && s.Sub != nil {
		s, depth = s.Sub, s.Depth
	}
	if s == nil {
		return protocol.SubagentEvent{}, false
	}
	p := protocol.SubagentEvent{ThreadID: e.ThreadID, TurnID: e.TurnID, CallID: e.CallID, Depth: depth,
		ChildThreadID: s.ThreadID, ChildTurnID: s.TurnID, Type: string(s.Type), Name: s.Name, Status: s.Status}
	switch s.Type {
	case event.TurnStarted, event.ToolStarted:
	case event.Result, event.Warning:
		p.Content = cutText(s.Content, subagentContentMax)
	case event.TurnCompleted:
		if t := s.Turn; t != nil {
			p.Status, p.Content, p.Cost = protocol.StatusOf(t.Status), cutText(t.Answer, subagentContentMax), t.Cost
			u := protocol.UsageOf(t.Usage)
			p.Usage = &u
		}
	default:
		return protocol.SubagentEvent{}, false
	}
	return p, true
}

// cutText keeps the first n characters of s.
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
