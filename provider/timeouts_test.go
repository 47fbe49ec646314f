package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/transport"
)

// TestIdleTimeoutFromTheConfigFile: a provider's idle_timeout reaches its
// adapter, for each protocol, so a server that stalls after its headers
// is cut then; without one the adapter's default (5 min) applies.
func TestIdleTimeoutFromTheConfigFile(t *testing.T) {
	stall := testkit.Round{Fault: testkit.FaultStallAfterHeaders}
	tests := []struct {
		protocol string
		base     func(t *testing.T) string
	}{
		{"openai-chat", func(t *testing.T) string { return testkit.NewChatServer(t, stall).BaseURL() }},
		{"openai", func(t *testing.T) string { return testkit.NewResponsesServer(t, stall).BaseURL() }},
		{"anthropic", func(t *testing.T) string {
			return testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: stall}).BaseURL()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.protocol, func(t *testing.T) {
			conf := fmt.Sprintf("[providers.p]\nprotocol = %q\nbase_url = %q\n[providers.p.models.m]\nidle_timeout = \"300ms\"\n", tt.protocol, tt.base(t))
			r, err := Resolve(Spec{Provider: "p", Model: "m"}, Config{Getenv: env(nil), File: mustParse(t, conf)})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.timeouts(); got.Idle != 300*time.Millisecond || got.ResponseHeader != 300*time.Millisecond {
				t.Errorf("timeouts %+v, want idle and header 300ms", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			s, err := r.Model.Stream(ctx, &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
			for err == nil {
				_, err = s.Recv()
			}
			if s != nil {
				s.Close()
			}
			var le *llm.Error
			if errors.Is(err, io.EOF) || !errors.As(err, &le) || le.Kind != llm.Timeout || le.Code != transport.CodeIdle {
				t.Fatalf("err = %v, want an idle timeout", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("cut after %s", took)
			}
		})
	}
}
