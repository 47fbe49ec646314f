package anthropic

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/think"
)

// modes runs a test streaming and not: both must produce the same events.
var modes = []struct {
	name   string
	noSSE  bool
	stream bool
}{
	{"sse", false, true},
	{"json", true, false},
}

func newMock(t *testing.T, noSSE bool, opts Options, rounds ...testkit.AnthropicRound) (*Model, *testkit.AnthropicServer) {
	t.Helper()
	srv := testkit.NewAnthropicServer(t, rounds...)
	opts.BaseURL = srv.BaseURL()
	opts.APIKey = "test-key"
	if opts.Model == "" {
		opts.Model = "claude-sonnet-4-20250514"
	}
	opts.DisableStreaming = noSSE
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

// drain reads a stream to its end.
func drain(t *testing.T, s llm.Stream) (events []llm.Event, resp *llm.Response, err error) {
	t.Helper()
	defer s.Close()
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return events, resp, nil
		}
		if err != nil {
			return events, resp, err
		}
		events = append(events, ev)
		if ev.Kind == llm.EventDone {
			resp = ev.Response
		}
	}
}

func run(t *testing.T, m *Model, req *llm.Request) ([]llm.Event, *llm.Response, error) {
	t.Helper()
	s, err := m.Stream(context.Background(), req)
	if err != nil {
		return nil, nil, err
	}
	return drain(t, s)
}

// summary is what a caller learns from the events, independent of how the
// text was split into deltas.
type summary struct {
	Text, Reasoning string
	Calls           []llm.Call
	Starts          int
	Args            map[int]string
	Usage           *llm.Usage
	Kinds           []llm.EventKind
}

func summarize(events []llm.Event) summary {
	s := summary{Args: map[int]string{}}
	for _, ev := range events {
		if n := len(s.Kinds); n == 0 || s.Kinds[n-1] != ev.Kind {
			s.Kinds = append(s.Kinds, ev.Kind)
		}
		switch ev.Kind {
		case llm.EventText:
			s.Text += ev.Delta
		case llm.EventReasoning:
			s.Reasoning += ev.Delta
		case llm.EventCallStart:
			s.Starts++
		case llm.EventCallDelta:
			s.Args[ev.Index] += ev.Delta
		case llm.EventCallDone:
			s.Calls = append(s.Calls, *ev.Call)
		case llm.EventUsage:
			s.Usage = ev.Usage
		}
	}
	return s
}

func TestRoundsProduceTheSameEventsStreamingOrNot(t *testing.T) {
	weather := testkit.MockCall{ID: "toolu_w", Name: "weather", Args: `{"location":"Florence, Italy"}`}
	cases := []struct {
		name      string
		round     testkit.AnthropicRound
		wantText  string
		wantParts []llm.Part
		finish    llm.FinishReason
		rawFinish string
		usage     llm.Usage
	}{
		{
			name:      "text answer",
			round:     testkit.AnthropicRound{Round: testkit.Round{Text: "Olá! Tudo bem?", InputTokens: 12, OutputTokens: 7}},
			wantText:  "Olá! Tudo bem?",
			wantParts: []llm.Part{{Kind: llm.PartText, Text: "Olá! Tudo bem?"}},
			finish:    llm.FinishStop, rawFinish: "end_turn",
			usage: llm.Usage{InputTokens: 12, OutputTokens: 7},
		},
		{
			name: "thinking then a call keeps the signature",
			round: testkit.AnthropicRound{Round: testkit.Round{Reasoning: "The user wants the weather.", Calls: []testkit.MockCall{weather}, InputTokens: 400, OutputTokens: 90},
				Signature: "EqoDsig=="},
			wantParts: []llm.Part{
				{Kind: llm.PartReasoning, Text: "The user wants the weather.", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "EqoDsig=="}},
				{Kind: llm.PartCall, Call: &llm.Call{ID: "toolu_w", Name: "weather", Args: `{"location":"Florence, Italy"}`}},
			},
			finish: llm.FinishToolCalls, rawFinish: "tool_use",
			usage: llm.Usage{InputTokens: 400, OutputTokens: 90},
		},
		{
			name: "parallel calls in order after preamble text",
			round: testkit.AnthropicRound{Round: testkit.Round{Text: "I'll add and multiply.", Calls: []testkit.MockCall{
				{ID: "toolu_a", Name: "add", Args: `{"a":2,"b":3}`}, {ID: "toolu_m", Name: "multiply", Args: `{"a":2,"b":3}`}}, InputTokens: 5, OutputTokens: 5}},
			wantText: "I'll add and multiply.",
			wantParts: []llm.Part{
				{Kind: llm.PartText, Text: "I'll add and multiply."},
				{Kind: llm.PartCall, Call: &llm.Call{ID: "toolu_a", Name: "add", Args: `{"a":2,"b":3}`}},
				{Kind: llm.PartCall, Call: &llm.Call{ID: "toolu_m", Name: "multiply", Args: `{"a":2,"b":3}`}},
			},
			finish: llm.FinishToolCalls, rawFinish: "tool_use",
			usage: llm.Usage{InputTokens: 5, OutputTokens: 5},
		},
		{
			name:  "redacted thinking kept as encrypted data",
			round: testkit.AnthropicRound{Round: testkit.Round{Text: "Done.", InputTokens: 1, OutputTokens: 1}, Redacted: "EmwKAhgBEgy3va3pzix"},
			wantParts: []llm.Part{
				{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic", Encrypted: "EmwKAhgBEgy3va3pzix"}},
				{Kind: llm.PartText, Text: "Done."},
			},
			wantText: "Done.",
			finish:   llm.FinishStop, rawFinish: "end_turn",
			usage: llm.Usage{InputTokens: 1, OutputTokens: 1},
		},
		{
			name:      "cache reads and writes count as input",
			round:     testkit.AnthropicRound{Round: testkit.Round{Text: "ok", InputTokens: 10, OutputTokens: 2}, CacheReadTokens: 300, CacheWriteTokens: 40},
			wantText:  "ok",
			wantParts: []llm.Part{{Kind: llm.PartText, Text: "ok"}},
			finish:    llm.FinishStop, rawFinish: "end_turn",
			usage: llm.Usage{InputTokens: 350, OutputTokens: 2, CachedInputTokens: 300, CacheWriteTokens: 40},
		},
		{
			name:      "max_tokens is a length finish",
			round:     testkit.AnthropicRound{Round: testkit.Round{Text: "The answer is", Finish: "max_tokens", InputTokens: 3, OutputTokens: 3}},
			wantText:  "The answer is",
			wantParts: []llm.Part{{Kind: llm.PartText, Text: "The answer is"}},
			finish:    llm.FinishLength, rawFinish: "max_tokens",
			usage: llm.Usage{InputTokens: 3, OutputTokens: 3},
		},
		{
			name:  "thinking-only round",
			round: testkit.AnthropicRound{Round: testkit.Round{Reasoning: "Hmm, let me think about this for a long time", Finish: "max_tokens", InputTokens: 3, OutputTokens: 4096}, Signature: "sig"},
			wantParts: []llm.Part{
				{Kind: llm.PartReasoning, Text: "Hmm, let me think about this for a long time", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "sig"}},
			},
			finish: llm.FinishLength, rawFinish: "max_tokens",
			usage: llm.Usage{InputTokens: 3, OutputTokens: 4096},
		},
	}
	for _, tc := range cases {
		var summaries []summary
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				m, srv := newMock(t, mode.noSSE, Options{}, tc.round)
				events, resp, err := run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("hi")}, Tools: weatherTools})
				if err != nil {
					t.Fatal(err)
				}
				if resp == nil {
					t.Fatal("no done event")
				}
				if !reflect.DeepEqual(resp.Parts, tc.wantParts) {
					t.Errorf("parts:\n got %s\nwant %s", show(resp.Parts), show(tc.wantParts))
				}
				if resp.Finish != tc.finish || resp.RawFinish != tc.rawFinish {
					t.Errorf("finish = %q (%q), want %q (%q)", resp.Finish, resp.RawFinish, tc.finish, tc.rawFinish)
				}
				if resp.Usage != tc.usage {
					t.Errorf("usage = %+v, want %+v", resp.Usage, tc.usage)
				}
				if resp.Model != "claude-sonnet-4-20250514" {
					t.Errorf("model = %q", resp.Model)
				}
				s := summarize(events)
				if s.Text != tc.wantText {
					t.Errorf("text events = %q, want %q", s.Text, tc.wantText)
				}
				var calls []llm.Call
				for _, p := range tc.wantParts {
					if p.Kind == llm.PartCall {
						calls = append(calls, *p.Call)
					}
				}
				if !reflect.DeepEqual(s.Calls, calls) || s.Starts != len(calls) {
					t.Errorf("call events = %+v (%d starts), want %+v", s.Calls, s.Starts, calls)
				}
				for i, c := range calls {
					if s.Args[i] != c.Args {
						t.Errorf("call %d deltas = %q, want %q", i, s.Args[i], c.Args)
					}
				}
				if s.Usage == nil || *s.Usage != tc.usage {
					t.Errorf("usage event = %+v, want %+v", s.Usage, tc.usage)
				}
				if got := s.Kinds[len(s.Kinds)-1]; got != llm.EventDone {
					t.Errorf("last event %v, want done", got)
				}
				if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream != mode.stream {
					t.Errorf("server saw %d requests (stream=%v), want 1 with stream=%v", len(reqs), reqs[0].Stream, mode.stream)
				}
				s.Args = nil
				summaries = append(summaries, s)
			})
		}
		if len(summaries) == 2 && !reflect.DeepEqual(summaries[0], summaries[1]) {
			t.Errorf("%s: streaming and JSON differ:\n sse  %+v\n json %+v", tc.name, summaries[0], summaries[1])
		}
	}
}

func TestStreamedInvalidArgumentsAreKeptAsReceived(t *testing.T) {
	m, _ := newMock(t, false, Options{}, testkit.AnthropicRound{Round: testkit.Round{
		Calls: []testkit.MockCall{{ID: "toolu_x", Name: "weather", Args: `{"location": "Flor`}}}})
	_, resp, err := run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("hi")}, Tools: weatherTools})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Parts[0].Call.Args; got != `{"location": "Flor` {
		t.Errorf("args = %q, want the fragments as received", got)
	}
}

func TestThinkingIsReplayedUnchangedWithResults(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m, srv := newMock(t, mode.noSSE, Options{ThinkingBudget: 2048},
				testkit.AnthropicRound{Round: testkit.Round{Reasoning: "Need weather.", Text: "Checking.", Calls: []testkit.MockCall{
					{ID: "toolu_1", Name: "weather", Args: `{"location":"Florence"}`},
					{ID: "toolu_2", Name: "weather", Args: `{"location":"Rome"}`}}}, Redacted: "opaque-data", Signature: "sig-1"},
				testkit.AnthropicRound{Round: testkit.Round{Text: "Florence 40 C, Rome unknown."}})
			history := []llm.Item{llm.UserText("Weather in Florence and Rome?")}
			_, resp, err := run(t, m, &llm.Request{Items: history, Tools: weatherTools})
			if err != nil {
				t.Fatal(err)
			}
			history = append(history, llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts},
				llm.ToolResult(llm.Result{CallID: "toolu_1", Name: "weather", Content: "40 C", Status: llm.ResultOK}),
				llm.ToolResult(llm.Result{CallID: "toolu_2", Name: "weather", Content: "no station", Status: llm.ResultError}),
				llm.Directive("Answer now."))
			if _, _, err := run(t, m, &llm.Request{Items: history, Tools: weatherTools}); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			got := reqs[1].Items
			want := []llm.Item{
				llm.UserText("Weather in Florence and Rome?"),
				{Role: llm.RoleAssistant, Parts: []llm.Part{
					{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic", Encrypted: "opaque-data"}},
					{Kind: llm.PartReasoning, Text: "Need weather.", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "sig-1"}},
					{Kind: llm.PartText, Text: "Checking."},
					{Kind: llm.PartCall, Call: &llm.Call{ID: "toolu_1", Name: "weather", Args: `{"location":"Florence"}`}},
					{Kind: llm.PartCall, Call: &llm.Call{ID: "toolu_2", Name: "weather", Args: `{"location":"Rome"}`}},
				}},
				llm.ToolResult(llm.Result{CallID: "toolu_1", Content: "40 C", Status: llm.ResultOK}),
				llm.ToolResult(llm.Result{CallID: "toolu_2", Content: "no station", Status: llm.ResultError}),
				llm.UserText("Answer now."),
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("second request decoded to\n%s\nwant\n%s", show(got), show(want))
			}
		})
	}
}

func TestTextPathFiltersInlineThinkAndKeepsRawText(t *testing.T) {
	raw := "<think>plan quietly</think>The answer is 4."
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m, _ := newMock(t, mode.noSSE, Options{}, testkit.AnthropicRound{Round: testkit.Round{Text: raw}})
			events, resp, err := run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("2+2?")}})
			if err != nil {
				t.Fatal(err)
			}
			s := summarize(events)
			if s.Text != "The answer is 4." || s.Reasoning != "plan quietly" {
				t.Errorf("text %q reasoning %q", s.Text, s.Reasoning)
			}
			if resp.Parts[0].Text != raw {
				t.Errorf("part text = %q, want the raw text", resp.Parts[0].Text)
			}
		})
	}
}

func TestCallsWrittenAsTextBecomeCallsUnlessNativeCallsCome(t *testing.T) {
	dsml := "Let me check.\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"weather\">\n<｜DSML｜parameter name=\"location\" string=\"true\">Florence</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
	cases := []struct {
		name      string
		round     testkit.Round
		wantCalls []string // names, in order
		wantText  string
		finish    llm.FinishReason
	}{
		{"text calls alone are used", testkit.Round{Text: dsml}, []string{"weather"}, "Let me check.", llm.FinishToolCalls},
		{"native calls win", testkit.Round{Text: dsml, Calls: []testkit.MockCall{{ID: "toolu_n", Name: "add", Args: `{"a":1,"b":2}`}}}, []string{"add"}, "Let me check.", llm.FinishToolCalls},
		// Inline reasoning stays in history, as in a round of native calls.
		{"inline think kept", testkit.Round{Text: "<think>which city?</think>" + dsml}, []string{"weather"}, "<think>which city?</think>Let me check.", llm.FinishToolCalls},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				m, _ := newMock(t, mode.noSSE, Options{}, testkit.AnthropicRound{Round: tc.round})
				events, resp, err := run(t, m, &llm.Request{Items: []llm.Item{llm.UserText("weather?")}, Tools: weatherTools})
				if err != nil {
					t.Fatal(err)
				}
				s := summarize(events)
				var names []string
				for _, c := range s.Calls {
					names = append(names, c.Name)
				}
				if !reflect.DeepEqual(names, tc.wantCalls) || s.Starts != len(tc.wantCalls) {
					t.Errorf("calls %v (%d starts), want %v", names, s.Starts, tc.wantCalls)
				}
				if visible := think.Strip(tc.wantText, think.Options{}); s.Text != visible {
					t.Errorf("visible text %q, want %q", s.Text, visible)
				}
				if resp.Parts[0].Kind != llm.PartText || resp.Parts[0].Text != tc.wantText {
					t.Errorf("history text %q, want the text without markup", resp.Parts[0].Text)
				}
				if resp.Finish != tc.finish {
					t.Errorf("finish %q", resp.Finish)
				}
				calls := (&llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}).Calls()
				if len(calls) != len(tc.wantCalls) {
					t.Fatalf("history calls %d", len(calls))
				}
				if c := calls[0]; c.Name == "weather" && (c.Args != `{"location":"Florence"}` || c.Format != llm.CallText || c.ID == "") {
					t.Errorf("text call = %+v", c)
				}
			})
		}
	}
}

func TestGatedEventsArriveAsReleased(t *testing.T) {
	m, srv := newMock(t, false, Options{}, testkit.AnthropicRound{Round: testkit.Round{Text: "abcdefgh12345678"}})
	srv.Gate()
	s, err := m.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// message_start, content_block_start, ping: nothing to show yet.
	go func() {
		for range 4 {
			srv.Release()
		}
	}()
	type recv struct {
		ev  llm.Event
		err error
	}
	got := make(chan recv, 1)
	go func() {
		ev, err := s.Recv()
		got <- recv{ev, err}
	}()
	select {
	case r := <-got:
		if r.err != nil || r.ev.Kind != llm.EventText || r.ev.Delta != "abcdefgh" {
			t.Fatalf("first event %+v %v, want the first text delta", r.ev, r.err)
		}
	case <-time.After(10 * time.Second):
		srv.Ungate()
		t.Fatal("the first text delta was released but no event came")
	}
	srv.Ungate()
	if _, _, err := drain(t, s); err != nil {
		t.Fatal(err)
	}
}

func show(v any) string {
	var b strings.Builder
	switch x := v.(type) {
	case []llm.Part:
		for _, p := range x {
			b.WriteString(showPart(p))
		}
	case []llm.Item:
		for _, it := range x {
			b.WriteString("  " + it.Role.String() + ":")
			for _, p := range it.Parts {
				b.WriteString(showPart(p))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func showPart(p llm.Part) string {
	s := " [" + string(p.Kind) + " " + p.Text
	if p.Call != nil {
		s += " call " + p.Call.ID + " " + p.Call.Name + " " + p.Call.Args + " " + string(p.Call.Format)
	}
	if p.Result != nil {
		s += " result " + p.Result.CallID + " " + p.Result.Content + " " + string(p.Result.Status)
	}
	if p.Opaque != nil {
		s += " opaque " + p.Opaque.Provider + " sig=" + p.Opaque.Signature + " enc=" + p.Opaque.Encrypted + " raw=" + string(p.Opaque.Raw)
	}
	return s + "]"
}

var weatherTools = []llm.ToolSpec{{
	Name:        "weather",
	Description: "Get weather information for a location",
	Schema:      []byte(`{"type":"object","properties":{"location":{"type":"string","description":"the city"}},"required":["location"]}`),
}, {
	Name:        "add",
	Description: "Add two numbers",
	Schema:      []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
}}
