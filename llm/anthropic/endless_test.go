package anthropic_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/transport"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

func newModel(t *testing.T, srv *testkit.AnthropicServer, o anthropic.Options) llm.Model {
	t.Helper()
	o.BaseURL, o.APIKey, o.Model = srv.BaseURL(), "k", "claude-sonnet-4-5"
	m, err := anthropic.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStallAfterHeadersIsCutByTheIdleTimeout: a server that sends its
// headers and then nothing ends the call with an llm.Timeout error once the
// idle bound passes, streamed or not. Before, the adapter's client had no
// bounds and such a call waited for ever.
func TestStallAfterHeadersIsCutByTheIdleTimeout(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "no-stream"}[noStream], func(t *testing.T) {
			srv := testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultStallAfterHeaders}})
			m := newModel(t, srv, anthropic.Options{DisableStreaming: noStream, Timeouts: transport.Timeouts{Idle: 200 * time.Millisecond}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := drain(ctx, m)
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.Timeout || le.Code != transport.CodeIdle || le.Provider != anthropic.Provider {
				t.Fatalf("err = %v, want an anthropic llm.Timeout error with code %s", err, transport.CodeIdle)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("cut after %s with an idle bound of 200ms", took)
			}
		})
	}
}

func drain(ctx context.Context, m llm.Model) error {
	s, err := m.Stream(ctx, &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestEndlessStreamThroughTheEngine: an endless stream of text or of call
// arguments is cut at the engine's caps, and a stalled one at the turn's
// deadline, over HTTP against the mock server.
func TestEndlessStreamThroughTheEngine(t *testing.T) {
	tests := []struct {
		name   string
		fault  testkit.Fault
		opts   loop.Options
		reason loop.StopReason
		cap    string
	}{
		{"text at the cap", testkit.FaultEndlessText, loop.Options{MaxRoundOutput: 1 << 20}, loop.StopOutputCapped, loop.CapRoundOutput},
		{"arguments at the cap", testkit.FaultEndlessArgs, loop.Options{MaxCallArgs: 256 << 10}, loop.StopOutputCapped, loop.CapCallArgs},
		{"stall at the deadline", testkit.FaultStallAfterHeaders, loop.Options{Budget: loop.Budget{Time: 500 * time.Millisecond}}, loop.StopForcedTime, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testkit.NewAnthropicServer(t,
				testkit.AnthropicRound{Round: testkit.Round{Fault: tt.fault, Calls: []testkit.MockCall{{Name: "echo"}}}},
				testkit.AnthropicRound{Round: testkit.Round{Text: "best effort"}})
			o := tt.opts
			o.Model = newModel(t, srv, anthropic.Options{})
			o.Tools = tool.NewSet(tool.New("echo", "echoes", func(context.Context, struct{}) (tool.Output, error) {
				t.Error("a cut call ran")
				return tool.Output{}, nil
			}))
			e, err := loop.New(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			out, err := e.Run(ctx, loop.Turn{Input: []llm.Item{llm.UserText("go")}})
			if out.StopReason != tt.reason {
				t.Fatalf("outcome %s/%s (err %v), want %s", out.Status, out.StopReason, err, tt.reason)
			}
			var ce *loop.CapError
			if tt.cap != "" && (!errors.As(err, &ce) || ce.Cap != tt.cap) {
				t.Errorf("err = %v, want a *CapError for %s", err, tt.cap)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the turn took %s", took)
			}
			if err := llm.CheckHistory(out.Items); err != nil {
				t.Errorf("history: %v", err)
			}
		})
	}
}

// TestEndlessWholeBodyIsBounded: a whole (not streamed) body that never
// ends is read up to llm/transport.MaxBody and refused with an llm.TooLarge
// error, which is not retried. Before, it was read until memory ran out.
func TestEndlessWholeBodyIsBounded(t *testing.T) {
	srv := testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultEndlessText}})
	m := newModel(t, srv, anthropic.Options{DisableStreaming: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := drain(ctx, m)
	if !errors.Is(err, llm.TooLarge) || llm.Transient(err) {
		t.Fatalf("err = %v, want a non-transient llm.TooLarge error", err)
	}
}

// TestEndlessKeepAlivesAreBounded: a stream of pings and nothing else is
// cut once it has sent llm/transport.MaxSilent bytes, with a non-transient
// llm.TooLarge error. Before, it ran for ever.
func TestEndlessKeepAlivesAreBounded(t *testing.T) {
	srv := testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: testkit.Round{Fault: testkit.FaultEndlessKeepAlive}})
	m := newModel(t, srv, anthropic.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := drain(ctx, m)
	if !errors.Is(err, llm.TooLarge) || llm.Transient(err) {
		t.Fatalf("err = %v, want a non-transient llm.TooLarge error", err)
	}
}
