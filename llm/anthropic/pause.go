package anthropic

import (
	"context"

	"github.com/reinhq/rein/llm"
)

// A turn of server tools (web search) that runs long is paused by the API
// with stop_reason pause_turn: the response holds what was done so far, and
// the client continues the turn by sending it back as-is, as the last
// (assistant) message of the same request, so the model carries on. The
// adapter does that inside one Stream, so the engine sees one round: the
// events of every continuation in order, call indexes running on, and one
// final response whose parts are all the continuations' and whose usage is
// their sum.

// maxPauseTurns bounds the continuations of one round: a server tool loop
// that pauses more often ends the round with what it has.
const maxPauseTurns = 8

// pauseTurn is the stop reason of a paused server tool turn.
const pauseTurn = "pause_turn"

// pausingStream continues a paused turn (see above).
type pausingStream struct {
	ctx context.Context
	m   *Model
	req *llm.Request
	cur llm.Stream

	// paused are the responses paused so far, each sent back as an
	// assistant message; parts and usage are what they add up to.
	paused []llm.Item
	parts  []llm.Part
	usage  llm.Usage
	// offset is the number of calls in the paused responses: later call
	// indexes run on from it.
	offset int
}

func (s *pausingStream) Recv() (llm.Event, error) {
	for {
		ev, err := s.cur.Recv()
		if err != nil {
			return ev, err
		}
		switch ev.Kind {
		case llm.EventCallStart, llm.EventCallDelta, llm.EventCallDone:
			ev.Index += s.offset
		case llm.EventDone:
			r := ev.Response
			if r != nil && r.RawFinish == pauseTurn && len(s.paused) < maxPauseTurns {
				if err := s.resume(r); err != nil {
					return llm.Event{}, err
				}
				continue
			}
			if r != nil && len(s.paused) > 0 {
				merged := *r
				merged.Parts = append(append([]llm.Part(nil), s.parts...), r.Parts...)
				merged.Usage = s.usage.Add(r.Usage)
				ev.Response = &merged
			}
		}
		return ev, nil
	}
}

// resume sends the request again with the paused response r appended.
func (s *pausingStream) resume(r *llm.Response) error {
	s.cur.Close()
	s.paused = append(s.paused, llm.Item{Role: llm.RoleAssistant, Parts: r.Parts})
	s.parts = append(s.parts, r.Parts...)
	s.usage = s.usage.Add(r.Usage)
	for _, p := range r.Parts {
		if p.Kind == llm.PartCall {
			s.offset++
		}
	}
	next := *s.req
	// The engine's items are shared: appended to a copy (History, the
	// thread's before the turn, is sent again as it is).
	next.Items = append(append(make([]llm.Item, 0, len(s.req.Items)+len(s.paused)), s.req.Items...), s.paused...)
	cur, err := s.m.stream(s.ctx, &next)
	if err != nil {
		return err
	}
	s.cur = cur
	return nil
}

func (s *pausingStream) Close() error { return s.cur.Close() }
