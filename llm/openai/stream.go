package openai

import (
	"errors"
	"io"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/transport"
)

// eventStream is an llm.Stream fed by a pull function: each call of pull
// reads more of the provider's answer and queues the events it yields, and
// returns io.EOF once the done event is queued.
type eventStream struct {
	queue  []llm.Event
	head   int
	pull   func(emit func(llm.Event)) error
	body   io.Closer
	err    error
	closed bool
	// read returns the bytes of the stream read so far (an SSE stream's);
	// nil for a whole body, which llm/transport.ReadAll bounds instead.
	read     func() int64
	silence  transport.Silence
	provider string
}

func (s *eventStream) emit(ev llm.Event) { s.queue = append(s.queue, ev) }

var errClosed = errors.New("openai: stream closed before its end")

// Recv implements llm.Stream.
func (s *eventStream) Recv() (llm.Event, error) {
	for s.head >= len(s.queue) {
		if s.err != nil {
			return llm.Event{}, s.err
		}
		s.queue = s.queue[:0]
		s.head = 0
		var before int64
		if s.read != nil {
			before = s.read()
		}
		err := s.pull(s.emit)
		if err == nil && s.read != nil && !s.output() {
			// An event the engine does not see: bounded on its own.
			if e := s.silence.Add(s.read() - before); e != nil {
				err = transport.TooLarge(s.provider, e)
			}
		}
		if err != nil {
			s.err = err
			s.Close()
		}
	}
	ev := s.queue[s.head]
	s.queue[s.head] = llm.Event{}
	s.head++
	return ev, nil
}

// output reports whether the queued events carry output.
func (s *eventStream) output() bool {
	for _, ev := range s.queue {
		if transport.Output(ev) {
			return true
		}
	}
	return false
}

// Close implements llm.Stream.
func (s *eventStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = errClosed
	}
	if s.body != nil {
		return s.body.Close()
	}
	return nil
}
