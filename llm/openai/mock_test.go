package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
)

type protocol struct {
	name   string
	server func(testing.TB, ...testkit.Round) *testkit.MockServer
	model  func(openai.Options) llm.Model
}

var protocols = []protocol{
	{"chat", testkit.NewChatServer, func(o openai.Options) llm.Model { return openai.NewChat(o) }},
	{"responses", testkit.NewResponsesServer, func(o openai.Options) llm.Model { return openai.NewResponses(o) }},
}

var weatherTool = llm.ToolSpec{Name: "weather", Description: "weather", Schema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`)}

func ask(text string) *llm.Request {
	return &llm.Request{Model: "mock", Items: []llm.Item{llm.UserText(text)}, Tools: []llm.ToolSpec{weatherTool}}
}

func TestFaultsBecomeTypedErrors(t *testing.T) {
	tests := []struct {
		name       string
		fault      testkit.Fault
		kind       llm.ErrorKind
		retryAfter time.Duration
	}{
		{"429 is rate limited with Retry-After", testkit.Fault429, llm.RateLimited, 1 * time.Second},
		{"500 is a server error", testkit.Fault500, llm.ServerError, 0},
		{"502 with an HTML body is a server error", testkit.Fault502, llm.ServerError, 0},
		{"503 is a server error", testkit.Fault503, llm.ServerError, 0},
		{"context length code is context window exceeded", testkit.FaultContextLength, llm.ContextWindowExceeded, 0},
		{"reset before output is an interrupted stream", testkit.FaultResetBeforeOutput, llm.StreamInterrupted, 0},
		{"reset after output is an interrupted stream", testkit.FaultResetAfterOutput, llm.StreamInterrupted, 0},
		{"missing terminal event is an interrupted stream", testkit.FaultNoTerminal, llm.StreamInterrupted, 0},
		{"malformed line is an interrupted stream", testkit.FaultMalformedLine, llm.StreamInterrupted, 0},
	}
	for _, p := range protocols {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				srv := p.server(t, testkit.Round{Text: "hello there, friend", Fault: tt.fault})
				m := p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()})
				_, err := streamAll(m, ask("hi"))
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T), want *llm.Error", err, err)
				}
				if e.Kind != tt.kind || !errors.Is(err, tt.kind) {
					t.Errorf("kind %s, want %s (%v)", e.Kind, tt.kind, err)
				}
				if e.RetryAfter != tt.retryAfter {
					t.Errorf("RetryAfter %v, want %v", e.RetryAfter, tt.retryAfter)
				}
				if !llm.Transient(err) && tt.kind != llm.ContextWindowExceeded {
					t.Errorf("%v should be transient", err)
				}
			})
		}
	}
}

func streamAll(m llm.Model, req *llm.Request) ([]llm.Event, error) {
	s, err := m.Stream(context.Background(), req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var evs []llm.Event
	for {
		ev, err := s.Recv()
		if err != nil {
			if err.Error() == "EOF" {
				return evs, nil
			}
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestRetryWrapperRetriesFaultsBeforeOutput(t *testing.T) {
	for _, p := range protocols {
		for _, f := range []testkit.Fault{testkit.Fault429, testkit.Fault503, testkit.FaultResetBeforeOutput, testkit.FaultNoTerminal} {
			t.Run(p.name, func(t *testing.T) {
				srv := p.server(t, testkit.Round{Fault: f, RetryAfter: "0.001"}, testkit.Round{Text: "ok"})
				var waits []time.Duration
				m := llm.WithRetry(p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()}), llm.RetryPolicy{
					Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
				})
				resp, err := llm.Collect(must(m.Stream(context.Background(), ask("hi"))))
				if err != nil {
					t.Fatalf("fault %d: %v", f, err)
				}
				if got := textOf(resp); got != "ok" {
					t.Errorf("text %q", got)
				}
				if len(waits) != 1 {
					t.Errorf("waits %v, want one retry", waits)
				}
				if f == testkit.Fault429 && waits[0] != time.Millisecond {
					t.Errorf("wait %v, want the server's Retry-After of 1ms", waits[0])
				}
			})
		}
	}
}

func must(s llm.Stream, err error) llm.Stream {
	if err != nil {
		return errStream{err}
	}
	return s
}

type errStream struct{ err error }

func (e errStream) Recv() (llm.Event, error) { return llm.Event{}, e.err }
func (e errStream) Close() error             { return nil }

func TestStreamingAndJSONGiveTheSameResponse(t *testing.T) {
	round := testkit.Round{
		Reasoning: "think about the weather",
		Text:      "Let me look that up — für dich.",
		Calls:     []testkit.MockCall{{Name: "weather", Args: `{"location":"Florence"}`}, {Name: "weather", Args: `{"location":"Rome"}`}},
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			var got [2]*llm.Response
			for i, noStream := range []bool{false, true} {
				srv := p.server(t, round)
				evs, err := streamAll(p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), NoStream: noStream}), ask("weather?"))
				if err != nil {
					t.Fatal(err)
				}
				got[i] = evs[len(evs)-1].Response
				checkEvents(t, got[i], evs)
				if c := srv.Requests()[0]; c.Stream == noStream {
					t.Errorf("request stream=%v, want %v", c.Stream, !noStream)
				}
			}
			for _, r := range got {
				calls := callsOf(r)
				if len(calls) != 2 || calls[0].Args != `{"location":"Florence"}` || calls[1].Args != `{"location":"Rome"}` {
					t.Errorf("calls %+v", calls)
				}
				if r.Finish != llm.FinishToolCalls {
					t.Errorf("finish %q", r.Finish)
				}
			}
			if !reflect.DeepEqual(stripUsage(got[0]), stripUsage(got[1])) {
				t.Errorf("streamed %+v\n   json %+v", got[0].Parts, got[1].Parts)
			}
		})
	}
}

func stripUsage(r *llm.Response) []llm.Part {
	var out []llm.Part
	for _, p := range r.Parts {
		if p.Opaque != nil {
			o := *p.Opaque
			o.Raw = nil // key order differs between stream and body
			p.Opaque = &o
		}
		out = append(out, p)
	}
	return out
}

func TestTruncatedRoundsFinishWithLength(t *testing.T) {
	for _, p := range protocols {
		finish := "length"
		if p.name == "responses" {
			finish = "max_output_tokens"
		}
		t.Run(p.name, func(t *testing.T) {
			srv := p.server(t, testkit.Round{Text: "partial", Finish: finish})
			resp, err := llm.Collect(must(p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()}).Stream(context.Background(), ask("x"))))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Finish != llm.FinishLength || resp.RawFinish != finish {
				t.Errorf("finish %q raw %q", resp.Finish, resp.RawFinish)
			}
		})
	}
}

func TestReasoningOnlyRoundKeepsReasoning(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := p.server(t, testkit.Round{Reasoning: "only thinking"})
			resp, err := llm.Collect(must(p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()}).Stream(context.Background(), ask("x"))))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Parts) != 1 || resp.Parts[0].Kind != llm.PartReasoning || resp.Parts[0].Text != "only thinking" {
				t.Errorf("parts %+v", resp.Parts)
			}
		})
	}
}

// DeepSeek's thinking mode refuses a tool round whose assistant message
// lacks its reasoning_content; earlier turns' reasoning is dropped.
func TestChatSendsReasoningBackOnlyOnTheCurrentTurnsCalls(t *testing.T) {
	reasoning := func(s string) llm.Part {
		raw, _ := json.Marshal(map[string]string{"reasoning_content": s})
		return llm.Part{Kind: llm.PartReasoning, Text: s, Opaque: &llm.Opaque{Provider: openai.ProviderChat, Raw: raw}}
	}
	call := func(id string) llm.Part {
		return llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "weather", Args: `{}`}}
	}
	items := []llm.Item{
		{TurnID: "t1", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "first"}}},
		{TurnID: "t1", Role: llm.RoleAssistant, Parts: []llm.Part{reasoning("old"), call("c1")}},
		{TurnID: "t1", Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &llm.Result{CallID: "c1", Content: "40 C"}}}},
		{TurnID: "t1", Role: llm.RoleAssistant, Parts: []llm.Part{reasoning("old answer"), {Kind: llm.PartText, Text: "hot"}}},
		{TurnID: "t2", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "again"}}},
		{TurnID: "t2", Role: llm.RoleUser, Origin: llm.OriginDirective, Parts: []llm.Part{{Kind: llm.PartText, Text: "be brief"}}},
		{TurnID: "t2", Role: llm.RoleAssistant, Parts: []llm.Part{reasoning("new"), {Kind: llm.PartText, Text: "checking"}, call("c2")}},
		{TurnID: "t2", Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartResult, Result: &llm.Result{CallID: "c2", Content: "41 C"}}}},
	}
	for _, turnID := range []string{"t2", ""} {
		srv := testkit.NewChatServer(t, testkit.Round{Text: "done"})
		m := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()})
		req := &llm.Request{Model: "deepseek-reasoner", TurnID: turnID, Items: items, Tools: []llm.ToolSpec{weatherTool}, ToolChoice: llm.ToolChoiceNone}
		if _, err := llm.Collect(must(m.Stream(context.Background(), req))); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages   []map[string]any `json:"messages"`
			ToolChoice string           `json:"tool_choice"`
			Tools      []any            `json:"tools"`
		}
		json.Unmarshal(srv.Requests()[0].Body, &body)
		var got []string
		for _, msg := range body.Messages {
			if msg["role"] == "assistant" {
				rc, _ := msg["reasoning_content"].(string)
				got = append(got, rc)
			}
		}
		if want := []string{"", "", "new"}; !reflect.DeepEqual(got, want) {
			t.Errorf("turn %q: reasoning_content per assistant message %q, want %q", turnID, got, want)
		}
		if n := len(body.Messages); n != 7 {
			t.Errorf("%d messages, want 7 (the user input and its directive merged)", n)
		}
		if body.ToolChoice != "none" || len(body.Tools) != 1 {
			t.Errorf("tool_choice %q with %d tools, want none with the definitions kept", body.ToolChoice, len(body.Tools))
		}
	}
}

func TestResponsesReplaysEncryptedReasoningBesideItsCalls(t *testing.T) {
	srv := testkit.NewResponsesServer(t,
		testkit.Round{Reasoning: "plan", Calls: []testkit.MockCall{{Name: "weather", Args: `{"location":"Florence"}`}}},
		testkit.Round{Text: "40 C in Florence"},
	)
	m := openai.NewResponses(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), ReasoningEffort: "low"})
	req := ask("weather?")
	resp, err := llm.Collect(must(m.Stream(context.Background(), req)))
	if err != nil {
		t.Fatal(err)
	}
	c := callsOf(resp)[0]
	req.Items = append(req.Items, llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}, llm.ToolResult(llm.Result{CallID: c.ID, Content: "40 C"}))
	if _, err := llm.Collect(must(m.Stream(context.Background(), req))); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Store   bool             `json:"store"`
		Include []string         `json:"include"`
		Input   []map[string]any `json:"input"`
	}
	json.Unmarshal(srv.Requests()[1].Body, &body)
	var kinds []string
	for _, in := range body.Input {
		k, _ := in["type"].(string)
		if k == "" {
			k, _ = in["role"].(string)
		}
		kinds = append(kinds, k)
		if k == "reasoning" && (in["encrypted_content"] != "enc-1" || in["id"] != nil) {
			t.Errorf("reasoning item %v: want encrypted content and no id", in)
		}
	}
	if got := strings.Join(kinds, ","); got != "user,reasoning,function_call,function_call_output" {
		t.Errorf("input kinds %s", got)
	}
	if body.Store || len(body.Include) != 1 || body.Include[0] != "reasoning.encrypted_content" {
		t.Errorf("store %v include %v", body.Store, body.Include)
	}
}

func TestResponsesDropsReasoningWithoutAFollowingItem(t *testing.T) {
	// A reasoning-only round (the model reasoned and said nothing): the API
	// refuses a reasoning item sent back without the item that followed it.
	srv := testkit.NewResponsesServer(t,
		testkit.Round{Reasoning: "hmm"},
		testkit.Round{Text: "here"},
	)
	m := openai.NewResponses(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), ReasoningEffort: "low"})
	req := ask("q")
	resp, err := llm.Collect(must(m.Stream(context.Background(), req)))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Parts) == 0 || resp.Parts[0].Kind != llm.PartReasoning {
		t.Fatalf("round 1 parts %+v, want the reasoning kept", resp.Parts)
	}
	req.Items = append(req.Items, llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}, llm.UserText("answer please"))
	if _, err := llm.Collect(must(m.Stream(context.Background(), req))); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Input []map[string]any `json:"input"`
	}
	json.Unmarshal(srv.Requests()[1].Body, &body)
	for _, in := range body.Input {
		if in["type"] == "reasoning" {
			t.Errorf("a reasoning item with nothing after it was sent back: %v", in)
		}
	}
}

func TestMissingCallIDsGetFreshUniqueIDs(t *testing.T) {
	// A server that sends calls without ids: the adapter must not invent
	// call_0 twice.
	seen := map[string]bool{}
	for range 3 {
		srv := testkit.NewChatServer(t)
		srv.Push(testkit.Round{Calls: []testkit.MockCall{{Name: "weather", Args: "{}", NoID: true}}})
		resp, err := llm.Collect(must(openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()}).Stream(context.Background(), ask("x"))))
		if err != nil {
			t.Fatal(err)
		}
		id := callsOf(resp)[0].ID
		if id == "" || seen[id] {
			t.Errorf("call id %q repeated or empty", id)
		}
		seen[id] = true
	}
}

func TestTextPathFiltersThinkAndDSML(t *testing.T) {
	dsml := "Checking.<｜DSML｜tool_calls><｜DSML｜invoke name=\"weather\"><｜DSML｜parameter name=\"location\" string=\"true\">Florence</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>"
	tests := []struct {
		name, text, visible, reasoning, part string
		calls                                int
	}{
		{"inline think becomes reasoning and stays in the part", "<think>hmm</think>Hello", "Hello", "hmm", "<think>hmm</think>Hello", 0},
		{"DSML markup becomes a text-format call", dsml, "Checking.", "", "Checking.", 1},
		// History keeps the reasoning of a text-call round as written, as
		// it does in a round of native calls; only the markup goes.
		{"think kept beside DSML calls", "<think>plan: <｜DSML｜tool_calls> is not a call here</think>\n" + dsml, "Checking.", "plan: <｜DSML｜tool_calls> is not a call here", "<think>plan: <｜DSML｜tool_calls> is not a call here</think>Checking.", 1},
	}
	for _, p := range protocols {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				srv := p.server(t, testkit.Round{Text: tt.text})
				srv.ChunkSize = 3
				evs, err := streamAll(p.model(openai.Options{APIKey: "k", BaseURL: srv.BaseURL()}), ask("x"))
				if err != nil {
					t.Fatal(err)
				}
				var vis, rsn strings.Builder
				for _, ev := range evs {
					switch ev.Kind {
					case llm.EventText:
						vis.WriteString(ev.Delta)
					case llm.EventReasoning:
						rsn.WriteString(ev.Delta)
					}
				}
				resp := evs[len(evs)-1].Response
				if vis.String() != tt.visible || rsn.String() != tt.reasoning || textOf(resp) != tt.part {
					t.Errorf("visible %q reasoning %q part %q", vis.String(), rsn.String(), textOf(resp))
				}
				calls := callsOf(resp)
				if len(calls) != tt.calls {
					t.Fatalf("calls %+v", calls)
				}
				for _, c := range calls {
					if c.ID == "" || c.Format != llm.CallText || c.Args != `{"location":"Florence"}` {
						t.Errorf("call %+v", c)
					}
				}
			})
		}
	}
}
