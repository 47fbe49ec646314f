package anthropic

import (
	"context"
	"io"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/reinhq/rein/llm"
)

// sseStream is a streamed call: it reads server-sent events as Recv asks for
// them, so an event reaches the caller as soon as its bytes arrive.
type sseStream struct {
	ctx    context.Context
	sse    *ssestream.Stream[sdk.MessageStreamEventUnion]
	asm    assembler
	err    error
	closed bool
}

func newSSEStream(ctx context.Context, s *ssestream.Stream[sdk.MessageStreamEventUnion], tools []llm.ToolSpec) *sseStream {
	st := &sseStream{ctx: ctx, sse: s}
	st.asm.init(tools)
	return st
}

func (s *sseStream) Recv() (llm.Event, error) {
	for {
		if ev, ok := s.asm.next(); ok {
			return ev, nil
		}
		if s.asm.stopped {
			s.Close()
			return llm.Event{}, io.EOF
		}
		if s.err != nil {
			return llm.Event{}, s.err
		}
		if s.closed {
			return llm.Event{}, io.EOF
		}
		if !s.sse.Next() {
			if err := s.sse.Err(); err != nil {
				s.err = mapError(s.ctx, err, s.asm.shown)
			} else {
				s.err = &llm.Error{Kind: llm.StreamInterrupted, Provider: Provider, Shown: s.asm.shown,
					Message: "the stream ended without message_stop"}
			}
			s.Close()
			continue
		}
		ev := s.sse.Current()
		if err := s.asm.event(&ev); err != nil {
			markShown(err, s.asm.shown)
			s.err = err
			s.Close()
		}
	}
}

func (s *sseStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.sse.Close()
}
