package anthropic

import (
	"context"
	"io"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/reinhq/rein/llm"
)

// The adapter's calls as they were made through the SDK's client, and its
// streams as they were read through the SDK's event decoder and union type,
// until transport.go and stream.go replaced them: the reference the adapter
// is compared with (event_test.go, transport_test.go). Only the request
// parameters (Model.params) and the assembler are shared, and neither reads
// the wire.

// sdkModel makes m's calls through the SDK's client.
type sdkModel struct {
	m      *Model
	client sdk.Client
}

func newSDKModel(m *Model) *sdkModel {
	hc := m.opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	client := sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(m.opts.APIKey),
		option.WithBaseURL(m.opts.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return &sdkModel{m: m, client: client}
}

func (r *sdkModel) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	params, temperature, err := r.m.params(req)
	if err != nil {
		return nil, &llm.Error{Kind: llm.BadRequest, Provider: Provider, Message: err.Error(), Err: err}
	}
	var reqOpts []option.RequestOption
	if temperature != nil {
		reqOpts = append(reqOpts, option.WithJSONSet("temperature", *temperature))
	}
	if !r.m.opts.DisableStreaming {
		s := r.client.Messages.NewStreaming(ctx, params, reqOpts...)
		return newSDKSSEStream(ctx, s, req.Tools), nil
	}
	reqOpts = append(reqOpts, option.WithRequestTimeout(time.Hour))
	msg, err := r.client.Messages.New(ctx, params, reqOpts...)
	if err != nil {
		return nil, mapError(ctx, err, false)
	}
	s := &jsonStream{}
	s.asm.init(req.Tools)
	if err := s.asm.message(msg); err != nil {
		return nil, err
	}
	return s, nil
}

// sdkSSEStream is the streamed call read through the SDK's decoder.
type sdkSSEStream struct {
	ctx    context.Context
	sse    *ssestream.Stream[sdk.MessageStreamEventUnion]
	asm    assembler
	err    error
	closed bool
}

func newSDKSSEStream(ctx context.Context, s *ssestream.Stream[sdk.MessageStreamEventUnion], tools []llm.ToolSpec) *sdkSSEStream {
	st := &sdkSSEStream{ctx: ctx, sse: s}
	st.asm.init(tools)
	return st
}

func (s *sdkSSEStream) Recv() (llm.Event, error) {
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

func (s *sdkSSEStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.sse.Close()
}
