package provider

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

func ptr[T any](v T) *T { return &v }

// streamWithTools makes one call that offers a tool, as the engine does
// (parallel calls asked for).
func streamWithTools(t *testing.T, m llm.Model) {
	t.Helper()
	s, err := m.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}, ParallelCalls: true, ToolChoice: llm.ToolChoiceAuto,
		Tools: []llm.ToolSpec{{Name: "weather", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(s); err != nil {
		t.Fatal(err)
	}
}

// TestParallelToolCallsAndEffortReachTheWire: parallel_tool_calls and
// every reasoning_effort the API takes, "none" included, are settable per
// model in the file and from the command line, which wins, on each
// protocol.
func TestParallelToolCallsAndEffortReachTheWire(t *testing.T) {
	no, yes := false, true
	for _, tt := range []struct {
		name     string
		protocol string
		table    string         // the model's table
		flags    config.Request // the command line
		want     map[string]any // fields of the body; nil wants the field absent
	}{
		{"chat: the file's", "openai-chat", "reasoning_effort = \"none\"\nparallel_tool_calls = false", config.Request{},
			map[string]any{"reasoning_effort": "none", "parallel_tool_calls": false}},
		{"chat: the command line wins", "openai-chat", "reasoning_effort = \"none\"\nparallel_tool_calls = false", config.Request{ReasoningEffort: ptr("xhigh"), ParallelToolCalls: &yes},
			map[string]any{"reasoning_effort": "xhigh", "parallel_tool_calls": true}},
		{"chat: rein's default", "openai-chat", "", config.Request{}, map[string]any{"reasoning_effort": nil, "parallel_tool_calls": true}},
		{"responses", "openai", "reasoning_effort = \"none\"\nparallel_tool_calls = false", config.Request{},
			map[string]any{"reasoning": map[string]any{"effort": "none"}, "parallel_tool_calls": false}},
		{"responses: from the command line only", "openai", "", config.Request{ReasoningEffort: ptr("minimal"), ParallelToolCalls: &no},
			map[string]any{"reasoning": map[string]any{"effort": "minimal"}, "parallel_tool_calls": false}},
		{"anthropic", "anthropic", "parallel_tool_calls = false", config.Request{},
			map[string]any{"tool_choice": map[string]any{"type": "auto", "disable_parallel_tool_use": true}}},
		{"anthropic: the command line wins", "anthropic", "parallel_tool_calls = false", config.Request{ParallelToolCalls: &yes},
			map[string]any{"tool_choice": map[string]any{"type": "auto", "disable_parallel_tool_use": false}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var base string
			var requests func() []testkit.Captured
			switch tt.protocol {
			case "openai-chat":
				srv := testkit.NewChatServer(t, testkit.Round{Text: "ok"})
				base, requests = srv.BaseURL(), srv.Requests
			case "openai":
				srv := testkit.NewResponsesServer(t, testkit.Round{Text: "ok"})
				base, requests = srv.BaseURL(), srv.Requests
			default:
				srv := testkit.NewAnthropicServer(t, testkit.AnthropicRound{Round: testkit.Round{Text: "ok"}})
				base, requests = srv.BaseURL(), srv.Requests
			}
			f := mustParse(t, "[providers.p]\nprotocol = \""+tt.protocol+"\"\nbase_url = \""+base+"\"\n\n[providers.p.models.m]\n"+tt.table+"\n")
			m, err := Open(Spec{"p", "m"}, Config{Getenv: env(nil), File: f, Request: tt.flags})
			if err != nil {
				t.Fatal(err)
			}
			streamWithTools(t, m)
			reqs := requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			b := body(t, reqs[0].Body)
			for k, want := range tt.want {
				got, ok := b[k]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want none", k, got)
					}
					continue
				}
				if k == "tool_choice" {
					// Only the fields asked about.
					g, _ := got.(map[string]any)
					for kk := range g {
						if _, asked := want.(map[string]any)[kk]; !asked {
							delete(g, kk)
						}
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v, want %v", k, got, want)
				}
			}
		})
	}
}

// TestCommandLineSettingsAreChecked: a setting from the command line gets
// the file's checks — its value, and whether the protocol takes it.
func TestCommandLineSettingsAreChecked(t *testing.T) {
	f := mustParse(t, "[providers.claude]\nprotocol = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\n\n[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n")
	for _, tt := range []struct {
		spec  Spec
		flags config.Request
		want  string
	}{
		{Spec{"local", "m"}, config.Request{ReasoningEffort: ptr("extreme")}, `the command line: reasoning_effort "extreme": use one of none, minimal`},
		{Spec{"claude", "m"}, config.Request{ReasoningEffort: ptr("high")}, "the command line: reasoning_effort is a setting of the openai and openai-chat protocols only, and this provider speaks anthropic (use thinking_budget)"},
	} {
		_, err := Resolve(tt.spec, Config{Getenv: env(nil), File: f, Request: tt.flags})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s with %+v: error %v, want one containing %q", tt.spec, tt.flags, err, tt.want)
		}
	}
}
