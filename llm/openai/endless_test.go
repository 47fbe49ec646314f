package openai_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/transport"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// endlessAPIs are the adapters against their mock servers.
var endlessAPIs = []struct {
	name string
	mock func(t testing.TB, rounds ...testkit.Round) *testkit.MockServer
	new  func(o openai.Options) llm.Model
}{
	{"chat", testkit.NewChatServer, func(o openai.Options) llm.Model { return openai.NewChat(o) }},
	{"responses", testkit.NewResponsesServer, func(o openai.Options) llm.Model { return openai.NewResponses(o) }},
}

// TestStallAfterHeadersIsCutByTheIdleTimeout: a server that sends its
// headers and then nothing ends the call with an llm.Timeout error once the
// idle bound passes, streamed or not. Before, the adapters used clients
// without bounds and such a call waited for ever.
func TestStallAfterHeadersIsCutByTheIdleTimeout(t *testing.T) {
	for _, api := range endlessAPIs {
		for _, noStream := range []bool{false, true} {
			name := api.name
			if noStream {
				name += "/no-stream"
			}
			t.Run(name, func(t *testing.T) {
				srv := api.mock(t, testkit.Round{Fault: testkit.FaultStallAfterHeaders})
				m := api.new(openai.Options{BaseURL: srv.BaseURL(), APIKey: "k", Model: "m", NoStream: noStream,
					Timeouts: transport.Timeouts{Idle: 200 * time.Millisecond}})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				err := drain(ctx, m)
				var le *llm.Error
				if !errors.As(err, &le) || le.Kind != llm.Timeout || le.Code != transport.CodeIdle || le.Provider != "openai" {
					t.Fatalf("err = %v, want an openai llm.Timeout error with code %s", err, transport.CodeIdle)
				}
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("cut after %s with an idle bound of 200ms", took)
				}
			})
		}
	}
}

// drain reads one call of m to its end and returns the error that ended it.
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
// arguments is cut at the engine's caps, and a slow one at the turn's
// deadline, over HTTP against the mock servers.
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
	for _, api := range endlessAPIs {
		for _, tt := range tests {
			t.Run(api.name+"/"+tt.name, func(t *testing.T) {
				srv := api.mock(t, testkit.Round{Fault: tt.fault, Calls: []testkit.MockCall{{Name: "echo"}}}, testkit.Round{Text: "best effort"})
				o := tt.opts
				o.Model = api.new(openai.Options{BaseURL: srv.BaseURL(), APIKey: "k", Model: "m"})
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
}

// TestEndlessWholeBodyIsBounded: a whole (not streamed) body that never
// ends is read up to llm/transport.MaxBody and refused with an llm.TooLarge
// error, which is not retried. Before, it was read until memory ran out.
func TestEndlessWholeBodyIsBounded(t *testing.T) {
	for _, api := range endlessAPIs {
		t.Run(api.name, func(t *testing.T) {
			srv := api.mock(t, testkit.Round{Fault: testkit.FaultEndlessText})
			m := api.new(openai.Options{BaseURL: srv.BaseURL(), APIKey: "k", Model: "m", NoStream: true})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := drain(ctx, m)
			if !errors.Is(err, llm.TooLarge) || llm.Transient(err) {
				t.Fatalf("err = %v, want a non-transient llm.TooLarge error", err)
			}
		})
	}
}

// TestEndlessKeepAlivesAreBounded: a stream of keep-alives and nothing else
// is cut once it has sent llm/transport.MaxSilent bytes, with a
// non-transient llm.TooLarge error. Before, it ran for ever: bytes kept
// arriving, so no idle bound fired, and the engine saw no output to cap.
func TestEndlessKeepAlivesAreBounded(t *testing.T) {
	for _, api := range endlessAPIs {
		t.Run(api.name, func(t *testing.T) {
			srv := api.mock(t, testkit.Round{Fault: testkit.FaultEndlessKeepAlive})
			m := api.new(openai.Options{BaseURL: srv.BaseURL(), APIKey: "k", Model: "m"})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := drain(ctx, m)
			if !errors.Is(err, llm.TooLarge) || llm.Transient(err) {
				t.Fatalf("err = %v, want a non-transient llm.TooLarge error", err)
			}
		})
	}
}
