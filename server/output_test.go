package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

const personSchema = `{"title":"Person","type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`

// TestTurnStartOutputReturnsTheDecodedAnswer: turn/start with an output
// schema asks the model for the answer in its shape (a scripted model takes
// it as a tool named by the schema's title); a paused turn answered with
// pause/answer keeps the schema; turn/completed and thread/read carry the
// answer as JSON, and a wrong call gets the repair round.
func TestTurnStartOutputReturnsTheDecodedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(t *testing.T, s *server.Server) func(t *testing.T) *client
	}{
		{"stdio", func(_ *testing.T, s *server.Server) func(t *testing.T) *client {
			return func(t *testing.T) *client { return stdioClient(t, s) }
		}},
		{"websocket", wsServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, sessionTools(make(chan struct{}))...)
			b.script("typed", scripted.Script{Rounds: []scripted.Round{
				{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}, Expect: []scripted.Expect{{ToolsInclude: []string{"Person", "ask_user"}}}},
				{Calls: []scripted.Call{{ID: "p1", Name: "Person", Args: map[string]any{"name": "Ada", "age": "old"}}}, Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "Ada"}}}},
				{Calls: []scripted.Call{{ID: "p2", Name: "Person", Args: map[string]any{"name": "Ada", "age": 36}}}, Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "p1", Contains: "age"}}}},
			}})
			c := tc.dial(t, b.server(t, server.Config{}))(t)
			c.initialize()
			var th protocol.ThreadResult
			c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:typed"}, &th)
			var started protocol.TurnStartResult
			c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("who?"), Output: json.RawMessage(personSchema)}, &started)

			var paused protocol.TurnNotification
			c.until(protocol.NotifyTurnCompleted, &paused, nil)
			if paused.Turn.Status != "paused" {
				t.Fatalf("first turn/completed %+v, want paused", paused.Turn)
			}
			c.call(protocol.MethodPauseAnswer, protocol.PauseAnswerParams{ThreadID: th.Thread.ID, TurnID: started.Turn.ID, CallID: "a1", Text: "Ada"}, nil)
			var done protocol.TurnNotification
			c.until(protocol.NotifyTurnCompleted, &done, nil)
			const want = `{"age":36,"name":"Ada"}` // as the model sent it
			if done.Turn.Status != "completed" || string(done.Turn.Output) != want {
				t.Fatalf("turn/completed %+v output %s, want completed with %s", done.Turn, done.Turn.Output, want)
			}
			var read protocol.ThreadReadResult
			c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &read)
			if n := len(read.Turns); n != 1 || string(read.Turns[0].Output) != want {
				t.Fatalf("thread/read turns %+v, want one with output %s", read.Turns, want)
			}
		})
	}
}

// TestTurnStartRefusesABadOutputSchema: a schema too large, not an object
// schema, not JSON of an object, or one that does not compile is refused
// with -32602 saying what is wrong, and no turn starts.
func TestTurnStartRefusesABadOutputSchema(t *testing.T) {
	b := newBackend(t)
	b.script("none", scripted.Script{})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:none"}, &th)
	huge := `{"type":"object","description":"` + strings.Repeat("x", server.MaxOutputSchema) + `"}`
	// Forty definitions, each naming the next twice in an allOf: an answer
	// would be checked 2^40 times, and the check would never return.
	var fan strings.Builder
	fan.WriteString(`{"type":"object","properties":{"a":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range 40 {
		fmt.Fprintf(&fan, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fan.WriteString(`"d40":{"type":"string"}}}`)
	// 5,000 levels in 50 KB: the schema library decodes it for seconds.
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"items":`, 5000) + `{}` + strings.Repeat(`}`, 5000) + `}}`
	for _, tc := range []struct{ name, schema, says string }{
		{"too large", huge, "at most"},
		{"an array root", `{"type":"array","items":{"type":"string"}}`, "root must be"},
		{"a string", `"an object please"`, "must be a JSON object"},
		{"a bad pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, "does not compile"},
		{"a missing definition", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "does not compile"},
		{"a bad reference", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "does not compile"},
		{"references that multiply", fan.String(), "refer to each definition once"},
		{"nested too deep", deep, "levels deep"},
	} {
		e := c.callErr(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("x"), Output: json.RawMessage(tc.schema)})
		if e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "output") || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: error %d %q, want -32602 naming output and saying %q", tc.name, e.Code, e.Message, tc.says)
		}
	}
	var read protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &read)
	if len(read.Turns) != 0 {
		t.Errorf("turns %+v after refused starts, want none", read.Turns)
	}
}

// TestThreadStartOutputIsTheThreadsDefault: thread/start's output schema
// is what the thread's turns answer in, unless a turn/start sends its own;
// thread/start and thread/read show it; a bad one is refused with -32602.
func TestThreadStartOutputIsTheThreadsDefault(t *testing.T) {
	const citySchema = `{"title":"City","type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	b := newBackend(t)
	b.script("default", scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "Person", Args: map[string]any{"name": "Ada", "age": 36}}}, Expect: []scripted.Expect{{Tools: []string{"Person"}}}},
		{Calls: []scripted.Call{{Name: "City", Args: map[string]any{"city": "Oslo"}}}, Expect: []scripted.Expect{{Tools: []string{"City"}}}},
	}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	if e := c.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:default", Output: json.RawMessage(`{"type":"array"}`)}); e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "output") {
		t.Errorf("a list schema at thread/start: %d %q, want -32602 naming output", e.Code, e.Message)
	}
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:default", Output: json.RawMessage(personSchema)}, &th)
	if string(th.Thread.Output) != personSchema {
		t.Errorf("thread/start's thread shows output %s, want the schema", th.Thread.Output)
	}
	for i, tc := range []struct {
		own  json.RawMessage
		want string
	}{
		{nil, `{"age":36,"name":"Ada"}`},
		{json.RawMessage(citySchema), `{"city":"Oslo"}`},
	} {
		c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("who?"), Output: tc.own}, nil)
		var done protocol.TurnNotification
		c.until(protocol.NotifyTurnCompleted, &done, nil)
		if done.Turn.Status != "completed" || string(done.Turn.Output) != tc.want {
			t.Errorf("turn %d: %+v output %s, want %s", i+1, done.Turn, done.Turn.Output, tc.want)
		}
	}
	var read protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &read)
	if string(read.Thread.Output) != personSchema {
		t.Errorf("thread/read's thread shows output %s, want the schema", read.Thread.Output)
	}
}
