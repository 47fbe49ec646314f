package scripted

import (
	"context"
	"io"
	"time"

	"github.com/reinhq/rein/llm"
)

// stream replays one use of a round. It starts no goroutine: delays are
// waited inside Recv, on the caller's goroutine, so cancelling ctx ends the
// wait at once and nothing outlives the stream.
type stream struct {
	ctx   context.Context
	p     *plan
	calls []llm.Call // the complete calls, then their headers (id and name) for call_start
	next  int        // the step Recv delivers next; len(p.steps) is done
	ended bool       // done delivered, an error returned, or closed
	err   error      // returned again by every Recv after a failure
	timer *time.Timer
	resp  llm.Response
	// small holds the parts of most rounds (reasoning, text, two calls), and
	// smallCalls the calls of a round of one, saving an allocation each per
	// round.
	small      [4]llm.Part
	smallCalls [2]llm.Call
}

func newStream(ctx context.Context, p *plan, n, rep int) *stream {
	s := &stream{ctx: ctx, p: p}
	s.resp = llm.Response{Finish: p.finish, RawFinish: string(p.finish), Usage: p.usage, Model: p.model}
	nparts := len(p.calls)
	if p.thinking != "" {
		nparts++
	}
	if p.text != "" {
		nparts++
	}
	if nparts == 0 {
		return s
	}
	parts := s.small[:0]
	if nparts > len(s.small) {
		parts = make([]llm.Part, 0, nparts)
	}
	if p.thinking != "" {
		parts = append(parts, llm.Part{Kind: llm.PartReasoning, Text: p.thinking})
	}
	if p.text != "" {
		parts = append(parts, llm.Part{Kind: llm.PartText, Text: p.text})
	}
	if k := len(p.calls); k > 0 {
		if k == 1 {
			s.calls = s.smallCalls[:]
		} else {
			s.calls = make([]llm.Call, 2*k)
		}
		setCallIDs(s.calls, p.calls, n, rep)
		for j := range p.calls {
			c := &p.calls[j]
			id := s.calls[j].ID
			s.calls[j] = llm.Call{ID: id, Name: c.name, Args: c.args}
			s.calls[k+j] = llm.Call{ID: id, Name: c.name}
			parts = append(parts, llm.Part{Kind: llm.PartCall, Call: &s.calls[j]})
		}
	}
	s.resp.Parts = parts
	return s
}

// Recv returns the round's next event; after done it returns io.EOF.
func (s *stream) Recv() (llm.Event, error) {
	if s.err != nil {
		return llm.Event{}, s.err
	}
	if s.ended {
		return llm.Event{}, io.EOF
	}
	if err := s.ctx.Err(); err != nil {
		return llm.Event{}, s.stop(err)
	}
	p := s.p
	if p.fail != nil && s.next == p.failAfter {
		e := *p.fail
		return llm.Event{}, s.stop(&e)
	}
	var d time.Duration
	if s.next > 0 {
		d = p.delay
	}
	if s.next == p.holdAt {
		d += p.hold
	}
	if d > 0 {
		if err := s.wait(d); err != nil {
			return llm.Event{}, s.stop(err)
		}
	}
	i := s.next
	s.next++
	if i == len(p.steps) {
		s.ended = true
		return llm.Event{Kind: llm.EventDone, Response: &s.resp}, nil
	}
	st := &p.steps[i]
	ev := llm.Event{Kind: st.kind, Index: st.index, Delta: st.delta}
	switch st.kind {
	case llm.EventCallStart:
		ev.Call = &s.calls[len(p.calls)+st.index]
	case llm.EventCallDone:
		ev.Call = &s.calls[st.index]
	case llm.EventUsage:
		ev.Usage = &s.resp.Usage
	}
	return ev, nil
}

func (s *stream) stop(err error) error {
	s.err, s.ended = err, true
	s.release()
	return err
}

// wait sleeps for d or until ctx is done. One timer serves the whole stream.
func (s *stream) wait(d time.Duration) error {
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case <-s.ctx.Done():
		s.timer.Stop()
		return s.ctx.Err()
	case <-s.timer.C:
		return nil
	}
}

func (s *stream) release() {
	if s.timer != nil {
		s.timer.Stop()
	}
}

// Close ends the stream; later Recv calls return io.EOF.
func (s *stream) Close() error {
	s.err, s.ended = nil, true
	s.release()
	return nil
}
