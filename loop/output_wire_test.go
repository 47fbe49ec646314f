package loop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
)

// Structured answers over the wire of each protocol, against the mock
// servers: the first answer is wrong (age as a string), the repair round
// gets what was wrong and the second answer is right.

const wrongAlice = `{"name":"Alice","age":"thirty","city":"Paris"}`

func TestStructuredAnswerRepairedOverEachProtocol(t *testing.T) {
	type wire struct {
		model    llm.Model
		requests func() []testkit.Captured
	}
	chatRounds := []testkit.Round{{Text: wrongAlice}, {Text: alice}}
	toolRounds := []testkit.Round{
		{Calls: []testkit.MockCall{{Name: "Person", Args: wrongAlice}}},
		{Calls: []testkit.MockCall{{Name: "Person", Args: alice}}},
	}
	tests := []struct {
		name string
		mode llm.OutputMode
		open func(t *testing.T) wire
		// first checks the first request's body; second the repair's.
		first, second string
	}{
		{
			name: "chat response_format", mode: llm.OutputNative,
			open: func(t *testing.T) wire {
				s := testkit.NewChatServer(t, chatRounds...)
				return wire{openai.NewChat(openai.Options{APIKey: "k", BaseURL: s.BaseURL(), Model: "m"}), s.Requests}
			},
			first:  `"response_format":{"type":"json_schema","json_schema":{"name":"Person","description":"A person with name, age, and city","schema":`,
			second: `must be an integer`,
		},
		{
			name: "responses text.format", mode: llm.OutputNative,
			open: func(t *testing.T) wire {
				s := testkit.NewResponsesServer(t, chatRounds...)
				return wire{openai.NewResponses(openai.Options{APIKey: "k", BaseURL: s.BaseURL(), Model: "m"}), s.Requests}
			},
			first:  `"text":{"format":{"type":"json_schema","name":"Person",`,
			second: `must be an integer`,
		},
		{
			name: "chat forced tool", mode: llm.OutputTool,
			open: func(t *testing.T) wire {
				s := testkit.NewChatServer(t, toolRounds...)
				return wire{openai.NewChat(openai.Options{APIKey: "k", BaseURL: s.BaseURL(), Model: "m", OutputTool: true}), s.Requests}
			},
			first:  `"tool_choice":{"type":"function","function":{"name":"Person"}}`,
			second: `must be an integer`,
		},
		{
			name: "anthropic forced tool", mode: llm.OutputTool,
			open: func(t *testing.T) wire {
				s := testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: toolRounds[0]}, testkit.AnthropicRound{Round: toolRounds[1]})
				m, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: s.BaseURL(), Model: "claude-sonnet-4-5"})
				if err != nil {
					t.Fatal(err)
				}
				return wire{m, s.Requests}
			},
			first:  `"tool_choice":{"name":"Person",`,
			second: `must be an integer`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.open(t)
			if got := llm.OutputModeOf(w.model); got != tc.mode {
				t.Fatalf("output mode %q, want %q", got, tc.mode)
			}
			e, err := loop.New(loop.Options{Model: w.model, Output: person})
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("Who is Alice?")}})
			wantOutput(t, out, err, loop.StopFinished)
			reqs := w.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				if r.Invariant != nil {
					t.Errorf("request %d breaks the history invariants: %v", i+1, r.Invariant)
				}
			}
			if !strings.Contains(string(reqs[0].Body), tc.first) {
				t.Errorf("first request lacks %s:\n%s", tc.first, reqs[0].Body)
			}
			if !strings.Contains(strings.ReplaceAll(string(reqs[1].Body), `\"`, `"`), tc.second) {
				t.Errorf("repair request lacks %q:\n%s", tc.second, reqs[1].Body)
			}
		})
	}
}
