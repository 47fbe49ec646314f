package scripted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// events reads s to its end and renders each event as a short string.
func events(t *testing.T, s llm.Stream) ([]string, *llm.Response, error) {
	t.Helper()
	defer s.Close()
	var out []string
	var resp *llm.Response
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, resp, nil
		}
		if err != nil {
			return out, resp, err
		}
		out = append(out, render(ev))
		if ev.Kind == llm.EventDone {
			resp = ev.Response
		}
	}
}

func render(ev llm.Event) string {
	switch ev.Kind {
	case llm.EventText, llm.EventReasoning:
		return fmt.Sprintf("%s %q", ev.Kind, ev.Delta)
	case llm.EventCallStart:
		return fmt.Sprintf("call_start %d %s %s args=%q", ev.Index, ev.Call.ID, ev.Call.Name, ev.Call.Args)
	case llm.EventCallDelta:
		return fmt.Sprintf("call_delta %d %q", ev.Index, ev.Delta)
	case llm.EventCallDone:
		return fmt.Sprintf("call_done %d %s %s %s", ev.Index, ev.Call.ID, ev.Call.Name, ev.Call.Args)
	case llm.EventUsage:
		return fmt.Sprintf("usage %d/%d", ev.Usage.InputTokens, ev.Usage.OutputTokens)
	case llm.EventDone:
		return fmt.Sprintf("done %s %d parts", ev.Response.Finish, len(ev.Response.Parts))
	}
	return ev.Kind.String()
}

func play(t *testing.T, m *Model, req *llm.Request) ([]string, *llm.Response, error) {
	t.Helper()
	s, err := m.Stream(context.Background(), req)
	if err != nil {
		return nil, nil, err
	}
	return events(t, s)
}

func TestStreamEvents(t *testing.T) {
	tests := []struct {
		name  string
		round Round
		want  []string
	}{
		{
			name:  "text only finishes with stop",
			round: Round{Text: "Hello.", Usage: llm.Usage{InputTokens: 3, OutputTokens: 2}},
			want:  []string{`text "Hello."`, "usage 3/2", "done stop 1 parts"},
		},
		{
			name:  "reasoning comes before text",
			round: Round{Thinking: "hm", Text: "ok"},
			want:  []string{`reasoning "hm"`, `text "ok"`, "usage 0/0", "done stop 2 parts"},
		},
		{
			name:  "calls finish with tool_calls and start without arguments",
			round: Round{Text: "Looking.", Calls: []Call{{ID: "a", Name: "ls", Args: map[string]any{"path": "."}}, {Name: "pwd"}}},
			want: []string{
				`text "Looking."`,
				`call_start 0 a ls args=""`, `call_delta 0 "{\"path\":\".\"}"`, `call_done 0 a ls {"path":"."}`,
				`call_start 1 call_1_2 pwd args=""`, `call_delta 1 "{}"`, `call_done 1 call_1_2 pwd {}`,
				"usage 0/0", "done tool_calls 3 parts",
			},
		},
		{
			name:  "chunk splits text and arguments",
			round: Round{Text: "abcdefg", Chunk: 3, Calls: []Call{{ID: "x", Name: "f", RawArgs: `{"a":1}`}}},
			want: []string{
				`text "abc"`, `text "def"`, `text "g"`,
				`call_start 0 x f args=""`, `call_delta 0 "{\"a"`, `call_delta 0 "\":1"`, `call_delta 0 "}"`, `call_done 0 x f {"a":1}`,
				"usage 0/0", "done tool_calls 2 parts",
			},
		},
		{
			name:  "chunk never splits a UTF-8 sequence",
			round: Round{Text: "héllo", Chunk: 2},
			want:  []string{`text "h"`, `text "é"`, `text "ll"`, `text "o"`, "usage 0/0", "done stop 1 parts"},
		},
		{
			name:  "a rune longer than the chunk goes whole",
			round: Round{Thinking: "日本", Chunk: 1},
			want:  []string{`reasoning "日"`, `reasoning "本"`, "usage 0/0", "done stop 1 parts"},
		},
		{
			name:  "raw arguments are sent verbatim even when invalid",
			round: Round{Calls: []Call{{ID: "r", Name: "f", RawArgs: `{"path": `}}},
			want:  []string{`call_start 0 r f args=""`, `call_delta 0 "{\"path\": "`, `call_done 0 r f {"path": `, "usage 0/0", "done tool_calls 1 parts"},
		},
		{
			name:  "args are not HTML-escaped",
			round: Round{Calls: []Call{{ID: "e", Name: "exec", Args: map[string]string{"cmd": "a && b > c"}}}},
			want:  []string{`call_start 0 e exec args=""`, `call_delta 0 "{\"cmd\":\"a && b > c\"}"`, `call_done 0 e exec {"cmd":"a && b > c"}`, "usage 0/0", "done tool_calls 1 parts"},
		},
		{
			name:  "an explicit finish wins",
			round: Round{Text: "cut off", Finish: llm.FinishLength},
			want:  []string{`text "cut off"`, "usage 0/0", "done length 1 parts"},
		},
		{
			name:  "an empty round still ends",
			round: Round{},
			want:  []string{"usage 0/0", "done stop 0 parts"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Script{Rounds: []Round{tt.round}})
			got, _, err := play(t, m, &llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestResponsePartsInOrder(t *testing.T) {
	m := New(Script{Model: "m1", Rounds: []Round{{
		Thinking: "think", Text: "say", Chunk: 1,
		Calls: []Call{{ID: "c1", Name: "a", Args: map[string]int{"n": 1}}, {ID: "c2", Name: "b"}},
		Usage: llm.Usage{InputTokens: 7, OutputTokens: 3},
	}}})
	_, resp, err := play(t, m, &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range resp.Parts {
		k := string(p.Kind)
		switch p.Kind {
		case llm.PartCall:
			k += ":" + p.Call.ID + ":" + p.Call.Name + ":" + p.Call.Args
		default:
			k += ":" + p.Text
		}
		kinds = append(kinds, k)
	}
	want := []string{"reasoning:think", "text:say", `call:c1:a:{"n":1}`, "call:c2:b:{}"}
	if !slices.Equal(kinds, want) {
		t.Errorf("parts = %q, want %q", kinds, want)
	}
	if resp.Finish != llm.FinishToolCalls || resp.Model != "m1" || resp.Usage.Total() != 10 {
		t.Errorf("response = finish %s model %q usage %+v", resp.Finish, resp.Model, resp.Usage)
	}
}

func TestRepeatGivesFreshIDs(t *testing.T) {
	m := New(Script{Rounds: []Round{
		{Text: "first", Calls: []Call{{Name: "a"}}},
		{Repeat: 3, Calls: []Call{{Name: "a"}, {ID: "mine", Name: "b"}}},
	}})
	if got := m.Remaining(); got != 4 {
		t.Fatalf("Remaining = %d, want 4", got)
	}
	var history []llm.Item
	var ids []string
	for range 4 {
		history = append(history, llm.UserText("go"))
		s, err := m.Stream(context.Background(), &llm.Request{Items: history})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Collect(s)
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts})
		for _, p := range resp.Parts {
			if p.Kind == llm.PartCall {
				ids = append(ids, p.Call.ID)
				history = append(history, llm.ToolResult(llm.Result{CallID: p.Call.ID, Name: p.Call.Name, Content: "ok"}))
			}
		}
	}
	want := []string{"call_1_1", "call_2_1", "mine", "call_3_1", "mine_2", "call_4_1", "mine_3"}
	if !slices.Equal(ids, want) {
		t.Errorf("ids = %q, want %q", ids, want)
	}
	if err := m.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestDelayAndHold(t *testing.T) {
	const delay, hold = 5 * time.Millisecond, 60 * time.Millisecond
	m := New(Script{Rounds: []Round{{Text: "ab", Chunk: 1, Delay: delay, Hold: hold, Calls: []Call{{ID: "c", Name: "f"}}}}})
	s, err := m.Stream(context.Background(), &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	var callDone, end time.Duration
	n := 0
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		switch ev.Kind {
		case llm.EventCallDone:
			callDone = time.Since(start)
		case llm.EventDone:
			end = time.Since(start)
		}
	}
	// text a, text b, call start, deltas { and }, call done, usage, done.
	if n != 8 {
		t.Fatalf("got %d events, want 8", n)
	}
	if callDone < 5*delay {
		t.Errorf("call done after %v, want at least %v of delays", callDone, 5*delay)
	}
	if end-callDone < hold {
		t.Errorf("stream ended %v after the call was complete, want at least the hold %v", end-callDone, hold)
	}
}

func TestCancelDuringDelay(t *testing.T) {
	tests := []struct {
		name  string
		round Round
	}{
		{"delay", Round{Text: "ab", Chunk: 1, Delay: time.Hour}},
		{"hold", Round{Calls: []Call{{ID: "c", Name: "f"}}, Hold: time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := New(Script{Rounds: []Round{tt.round}})
			s, err := m.Stream(ctx, &llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			time.AfterFunc(20*time.Millisecond, cancel)
			start := time.Now()
			for {
				_, err = s.Recv()
				if err != nil {
					break
				}
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cancel took %v", d)
			}
			if _, err := s.Recv(); !errors.Is(err, context.Canceled) {
				t.Errorf("Recv after cancel = %v, want context.Canceled again", err)
			}
		})
	}
}

func TestCancelledBeforeStreamConsumesNothing(t *testing.T) {
	m := New(Script{Rounds: []Round{{Text: "a"}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Stream(ctx, &llm.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if m.Remaining() != 1 {
		t.Errorf("Remaining = %d, want 1", m.Remaining())
	}
}

func TestRoundError(t *testing.T) {
	tests := []struct {
		name       string
		spec       ErrorSpec
		wantEvents []string
		want       llm.Error
	}{
		{
			name:       "fails before any event",
			spec:       ErrorSpec{Kind: llm.RateLimited, Status: 429, Message: "slow down", RetryAfter: 2 * time.Second},
			wantEvents: nil,
			want:       llm.Error{Kind: llm.RateLimited, Status: 429, Provider: "scripted", Message: "slow down", RetryAfter: 2 * time.Second},
		},
		{
			name:       "fails after visible text",
			spec:       ErrorSpec{Kind: llm.StreamInterrupted, After: 2},
			wantEvents: []string{`text "He"`, `text "ll"`},
			want:       llm.Error{Kind: llm.StreamInterrupted, Provider: "scripted", Message: "scripted error"},
		},
		{
			name:       "kind follows status",
			spec:       ErrorSpec{Status: 503, After: 1},
			wantEvents: []string{`text "He"`},
			want:       llm.Error{Kind: llm.ServerError, Status: 503, Provider: "scripted", Message: "scripted error"},
		},
		{
			name:       "after past the end fails in place of done",
			spec:       ErrorSpec{After: 99},
			wantEvents: []string{`text "He"`, `text "ll"`, `text "o"`, "usage 0/0"},
			want:       llm.Error{Kind: llm.ServerError, Provider: "scripted", Message: "scripted error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			m := New(Script{Rounds: []Round{{Text: "Hello", Chunk: 2, Error: &spec}}})
			s, err := m.Stream(context.Background(), &llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := events(t, s)
			if !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %q, want %q", got, tt.wantEvents)
			}
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *llm.Error", err)
			}
			if *e != tt.want {
				t.Errorf("err = %+v, want %+v", *e, tt.want)
			}
			if _, again := s.Recv(); again == nil {
				t.Error("Recv after the error succeeded")
			}
			if err := m.Verify(); err != nil {
				t.Errorf("a scripted error is not a failure, Verify = %v", err)
			}
		})
	}
}

func TestErrorRoundIsRetriedWithTheNextRound(t *testing.T) {
	m := New(Script{Rounds: []Round{
		{Error: &ErrorSpec{Status: 429}},
		{Text: "ok"},
	}})
	slept := 0
	retry := llm.WithRetry(m, llm.RetryPolicy{Sleep: func(context.Context, time.Duration) error { slept++; return nil }})
	s, err := retry.Stream(context.Background(), &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if slept != 1 || len(resp.Parts) != 1 || resp.Parts[0].Text != "ok" {
		t.Errorf("slept %d times, parts %+v", slept, resp.Parts)
	}
}

func TestExpectations(t *testing.T) {
	history := []llm.Item{
		llm.UserText("What is the weather?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c1", Name: "weather", Args: "{}"}},
			{Kind: llm.PartCall, Call: &llm.Call{ID: "c2", Name: "clock", Args: "{}"}},
		}},
		llm.ToolResult(llm.Result{CallID: "c1", Name: "weather", Content: "Paris: 40 C"}),
		llm.ToolResult(llm.Result{CallID: "c2", Name: "clock", Content: "noon", Status: llm.ResultError}),
		llm.UserText("Mind the budget."),
		llm.Directive("Answer now."),
	}
	req := &llm.Request{
		System: "You are helpful.", Items: history, Phase: llm.PhaseSettle,
		Tools: []llm.ToolSpec{{Name: "read_file"}, {Name: "list_dir"}},
	}
	tests := []struct {
		name   string
		expect Expect
		want   string // "" for pass, else a part of the message
	}{
		{"result of a call contains", Expect{Result: &ResultExpect{Call: "c1", Contains: "40 C"}}, ""},
		{"result of a call lacks", Expect{Result: &ResultExpect{Call: "c1", Contains: "41 C"}}, `expected the result of call "c1" to contain "41 C"; received "Paris: 40 C"`},
		{"result of an unknown call", Expect{Result: &ResultExpect{Call: "c9"}}, `expected the result of call "c9"; the history has none`},
		{"result of a tool by name", Expect{Result: &ResultExpect{Tool: "weather", Equals: "Paris: 40 C"}}, ""},
		{"latest result status", Expect{Result: &ResultExpect{Status: llm.ResultError}}, ""},
		{"result status differs", Expect{Result: &ResultExpect{Call: "c1", Status: llm.ResultError}}, `expected the result of call "c1" to have status error; received ok`},
		{"last user joins adjacent user items", Expect{LastUser: &TextExpect{Equals: "Mind the budget.\nAnswer now."}}, ""},
		{"last user contains", Expect{LastUser: &TextExpect{Contains: "budget"}}, ""},
		{"last user lacks", Expect{LastUser: &TextExpect{Contains: "weather"}}, `expected the last user message to contain "weather"; received "Mind the budget.\nAnswer now."`},
		{"tool choice empty counts as auto", Expect{ToolChoice: llm.ToolChoiceAuto}, ""},
		{"tool choice differs", Expect{ToolChoice: llm.ToolChoiceNone}, "expected tool_choice none; received auto"},
		{"tools exact set in any order", Expect{Tools: []string{"list_dir", "read_file"}}, ""},
		{"tools exact set differs", Expect{Tools: []string{"list_dir"}}, "expected tools [list_dir]; received [list_dir read_file]"},
		{"no tools expected", Expect{Tools: []string{}}, "expected tools []; received [list_dir read_file]"},
		{"tools include", Expect{ToolsInclude: []string{"read_file"}}, ""},
		{"tools include missing", Expect{ToolsInclude: []string{"read_file", "exec"}}, "expected tools to include [exec]; received [list_dir read_file]"},
		{"phase", Expect{Phase: llm.PhaseSettle}, ""},
		{"phase differs", Expect{Phase: llm.PhaseFinal}, "expected phase final; received settle"},
		{"system contains", Expect{System: &TextExpect{Contains: "helpful"}}, ""},
		{"system lacks", Expect{System: &TextExpect{Contains: "terse"}}, `expected the system prompt to contain "terse"; received "You are helpful."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Script{Rounds: []Round{{Text: "a"}, {Text: "b", Expect: []Expect{tt.expect}}}})
			if _, _, err := play(t, m, &llm.Request{}); err != nil {
				t.Fatal(err)
			}
			_, _, err := play(t, m, req)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("expectation failed: %v", err)
				}
				if err := m.Verify(); err != nil {
					t.Errorf("Verify: %v", err)
				}
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.BadRequest || e.Provider != "scripted" {
				t.Fatalf("err = %#v, want a scripted bad_request", err)
			}
			if !strings.Contains(e.Message, "round 2: ") || !strings.Contains(e.Message, tt.want) {
				t.Errorf("message = %q, want it to name round 2 and say %q", e.Message, tt.want)
			}
			if v := m.Verify(); v == nil || !strings.Contains(v.Error(), tt.want) {
				t.Errorf("Verify = %v, want the failure recorded", v)
			}
		})
	}
}

func TestLastUserNeedsATrailingUserMessage(t *testing.T) {
	m := New(Script{Rounds: []Round{{Expect: []Expect{{LastUser: &TextExpect{}}}}}})
	_, _, err := play(t, m, &llm.Request{Items: []llm.Item{
		llm.UserText("hi"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "k", Name: "f"}}}},
		llm.ToolResult(llm.Result{CallID: "k", Content: "x"}),
	}})
	if err == nil || !strings.Contains(err.Error(), `expected a trailing user message; the last item is the result of call "k"`) {
		t.Errorf("err = %v", err)
	}
}

func TestHistoryCheck(t *testing.T) {
	broken := []llm.Item{
		llm.UserText("hi"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "k", Name: "f"}}}},
		llm.UserText("no result for k"),
	}
	tests := []struct {
		name string
		opts []Option
		fail bool
	}{
		{"checked by default", nil, true},
		{"off with NoHistoryCheck", []Option{NoHistoryCheck()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Script{Rounds: []Round{{Text: "a"}}}, tt.opts...)
			_, _, err := play(t, m, &llm.Request{Items: broken})
			if got := err != nil; got != tt.fail {
				t.Fatalf("err = %v, want failure %v", err, tt.fail)
			}
			if tt.fail && !errors.Is(err, llm.BadRequest) || tt.fail && !strings.Contains(err.Error(), `round 1: history breaks the invariants: item 3: call "k"`) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestExhausted(t *testing.T) {
	m := New(Script{Rounds: []Round{{Text: "a", Repeat: 2}}})
	for range 2 {
		if _, _, err := play(t, m, &llm.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := play(t, m, &llm.Request{})
	if !errors.Is(err, llm.BadRequest) || !strings.Contains(err.Error(), "request 3: script exhausted after 2 rounds") {
		t.Fatalf("err = %v", err)
	}
	if v := m.Verify(); v == nil || !strings.Contains(v.Error(), "script exhausted") {
		t.Errorf("Verify = %v, want the exhaustion", v)
	}
}

func TestRemainingAndVerify(t *testing.T) {
	m := New(Script{Rounds: []Round{{Text: "a"}, {Text: "b", Repeat: 3}, {Text: "c"}}})
	if got := m.Remaining(); got != 5 {
		t.Fatalf("Remaining = %d, want 5", got)
	}
	for range 2 {
		if _, _, err := play(t, m, &llm.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Remaining(); got != 3 {
		t.Errorf("Remaining = %d, want 3", got)
	}
	err := m.Verify()
	if err == nil || !strings.Contains(err.Error(), "3 of 5 rounds not used; the next is script round 2, repeat 2 of 3") {
		t.Errorf("Verify = %v", err)
	}
	for range 3 {
		if _, _, err := play(t, m, &llm.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Verify(); err != nil {
		t.Errorf("Verify after the whole script = %v", err)
	}
}

func TestRecordRequestsCopiesHistory(t *testing.T) {
	m := New(Script{Rounds: []Round{{Text: "a"}, {Text: "b"}}}, RecordRequests())
	history := make([]llm.Item, 1, 8)
	history[0] = llm.UserText("first")
	if _, _, err := play(t, m, &llm.Request{Items: history, Round: 1}); err != nil {
		t.Fatal(err)
	}
	history[0] = llm.UserText("overwritten by the engine")
	if _, _, err := play(t, m, &llm.Request{Items: history, Round: 2}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || reqs[0].Round != 1 || reqs[1].Round != 2 {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := reqs[0].Items[0].Text(); got != "first" {
		t.Errorf("recorded history = %q, want the items as they were sent", got)
	}
	if New(Script{}).Requests() != nil {
		t.Error("a model without RecordRequests recorded requests")
	}
}

func TestInvalidScript(t *testing.T) {
	tests := []struct {
		name   string
		script Script
		want   string
	}{
		{"args not an object", Script{Rounds: []Round{{Calls: []Call{{Name: "f", Args: []int{1}}}}}}, "script round 1: call 1: args is not a JSON object"},
		{"args and raw args", Script{Rounds: []Round{{Calls: []Call{{Name: "f", Args: map[string]int{}, RawArgs: "{}"}}}}}, "both args and raw_args"},
		{"args not marshalable", Script{Rounds: []Round{{Calls: []Call{{Name: "f", Args: map[string]any{"c": make(chan int)}}}}}}, "call 1: args: json: unsupported type"},
		{"call without a name", Script{Rounds: []Round{{Calls: []Call{{ID: "x"}}}}}, "call 1: name is empty"},
		{"duplicate call id", Script{Rounds: []Round{{Calls: []Call{{ID: "x", Name: "f"}}}, {Calls: []Call{{ID: "x", Name: "f"}}}}}, `script round 2: call 1: its id is already used in script round 1`},
		{"id of the generated form", Script{Rounds: []Round{{Calls: []Call{{ID: "call_1_1", Name: "f"}}}}}, "has the form of a generated id"},
		{"unknown finish", Script{Rounds: []Round{{Finish: "done"}}}, `finish is not one of`},
		{"negative chunk", Script{Rounds: []Round{{Chunk: -1}}}, "chunk is -1"},
		{"negative hold", Script{Rounds: []Round{{Hold: -time.Second}}}, "hold is -1s"},
		{"repeat too large", Script{Rounds: []Round{{Repeat: maxRepeat + 1}}}, "repeat is"},
		{"unknown error kind", Script{Rounds: []Round{{Error: &ErrorSpec{Kind: "boom"}}}}, `error: kind is not one of`},
		{"error status out of range", Script{Rounds: []Round{{Error: &ErrorSpec{Status: 42}}}}, "status 42 is not an HTTP status"},
		{"empty expectation", Script{Rounds: []Round{{Expect: []Expect{{}}}}}, "expect 1: expects nothing"},
		{"unknown phase", Script{Rounds: []Round{{Expect: []Expect{{Phase: "settling"}}}}}, `phase is not one of explore, settle, final`},
		{"unknown tool choice", Script{Rounds: []Round{{Expect: []Expect{{ToolChoice: "never"}}}}}, `tool_choice is not one of`},
		{"unknown result status", Script{Rounds: []Round{{Expect: []Expect{{Result: &ResultExpect{Status: "fine"}}}}}}, `result status is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.script)
			_, err := m.Stream(context.Background(), &llm.Request{})
			if !errors.Is(err, llm.BadRequest) || !strings.Contains(err.Error(), "invalid script") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Stream err = %v, want an invalid script error saying %q", err, tt.want)
			}
			if v := m.Verify(); v == nil || !strings.Contains(v.Error(), tt.want) {
				t.Errorf("Verify = %v", v)
			}
		})
	}
}

func TestConcurrentStreamsTakeEachRoundOnce(t *testing.T) {
	const n = 16
	m := New(Script{Rounds: []Round{{Calls: []Call{{Name: "f"}}, Repeat: n}}}, RecordRequests())
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			s, err := m.Stream(context.Background(), &llm.Request{})
			if err != nil {
				t.Error(err)
				return
			}
			resp, err := llm.Collect(s)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = resp.Parts[0].Call.ID
		})
	}
	wg.Wait()
	slices.Sort(ids)
	if len(slices.Compact(ids)) != n || m.Remaining() != 0 || len(m.Requests()) != n {
		t.Errorf("ids %q, remaining %d", ids, m.Remaining())
	}
}

func TestCloseEndsTheStream(t *testing.T) {
	m := New(Script{Rounds: []Round{{Text: "abc", Chunk: 1}}})
	s, err := m.Stream(context.Background(), &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("Recv after Close = %v, want io.EOF", err)
	}
}

func TestSetCallIDs(t *testing.T) {
	calls := make([]callPlan, 12)
	calls[3].id = "mine"
	calls[11].id = "last"
	tests := []struct {
		name   string
		n, rep int
		want   map[int]string
	}{
		{"first use", 7, 0, map[int]string{0: "call_7_1", 3: "mine", 9: "call_7_10", 10: "call_7_11", 11: "last"}},
		{"repeat suffixes given ids", 123, 9, map[int]string{0: "call_123_1", 3: "mine_10", 10: "call_123_11", 11: "last_10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]llm.Call, len(calls))
			setCallIDs(dst, calls, tt.n, tt.rep)
			for j, want := range tt.want {
				if dst[j].ID != want {
					t.Errorf("call %d: id %q, want %q", j, dst[j].ID, want)
				}
			}
		})
	}
}
