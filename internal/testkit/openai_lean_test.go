package testkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/llm"
)

// errTB records the errors a mock server reports instead of failing.
type errTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (e *errTB) Errorf(format string, args ...any) {
	e.mu.Lock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

func (e *errTB) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.errs
	e.errs = nil
	return out
}

// sseEvents posts body and returns the data of each event, decoded.
func sseEvents(t *testing.T, url, body string) []any {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out = append(out, data)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, v)
	}
	return out
}

func TestLeanChatStreamsAsTheFullMock(t *testing.T) {
	rounds := []Round{
		{Reasoning: "Let me think… \"quoted\"", Text: "Héllo, <world> & \\ back\nslash\ttab"},
		{Calls: []MockCall{{Name: "weather", Args: `{"location":"Florence, Italy"}`}, {ID: "fixed", Name: "add", Args: `{"a":2,"b":3}`}, {NoID: true, Name: "x", Args: ""}}},
		{Text: "cut", Finish: "length", InputTokens: 7, OutputTokens: 3},
		{Text: ""},
	}
	body := `{"stream":true,"messages":[{"role":"user","content":"go"}]}`
	full := NewChatServer(t, rounds...)
	lean := NewChatServer(t)
	lean.ChunkSize, full.ChunkSize = 5, 5
	lean.Lean()
	lean.Push(rounds...)
	for i := range rounds {
		want := sseEvents(t, full.URL, body)
		got := sseEvents(t, lean.URL, body)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round %d: lean stream\n%v\nwant\n%v", i, got, want)
		}
	}
}

// chatBodyOf encodes messages as a streaming request, with the keys in
// the order given.
func chatBodyOf(streamFirst bool, msgs ...string) string {
	m := `"messages":[` + strings.Join(msgs, ",") + `]`
	if streamFirst {
		return `{"stream":true,` + m + `,"model":"m"}`
	}
	return `{` + m + `,"model":"m","tools":[{"type":"function","function":{"name":"noop"}}],"stream":true}`
}

const (
	leanUser   = `{"role":"user","content":"go"}`
	leanUser2  = `{"role":"user","content":"again"}`
	leanCall1  = `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"noop","arguments":"{}"}}]}`
	leanRes1   = `{"role":"tool","tool_call_id":"c1","content":"ok"}`
	leanCall2  = `{"role":"assistant","content":"more","tool_calls":[{"id":"c2","type":"function","function":{"name":"noop","arguments":"{}"}}]}`
	leanRes2   = `{"role":"tool","tool_call_id":"c2","content":"ok"}`
	leanAnswer = `{"role":"assistant","content":"done"}`
)

func TestLeanChecksTheNewItemsAsTheWholeHistory(t *testing.T) {
	for _, streamFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("streamFirst=", streamFirst), func(t *testing.T) {
			for _, c := range []struct {
				name  string
				steps [][]string
				// bad is the index of the step whose request breaks the
				// invariants, -1 for none.
				bad int
			}{
				{"growing", [][]string{{leanUser}, {leanUser, leanCall1, leanRes1}, {leanUser, leanCall1, leanRes1, leanCall2, leanRes2}, {leanUser, leanCall1, leanRes1, leanCall2, leanRes2, leanAnswer, leanUser2}}, -1},
				{"retry", [][]string{{leanUser, leanCall1, leanRes1}, {leanUser, leanCall1, leanRes1}, {leanUser, leanCall1, leanRes1, leanCall2, leanRes2}}, -1},
				{"duplicate id across the boundary", [][]string{{leanUser, leanCall1, leanRes1}, {leanUser, leanCall1, leanRes1, leanCall1, leanRes1}}, 1},
				{"result of an earlier call", [][]string{{leanUser, leanCall1, leanRes1}, {leanUser, leanCall1, leanRes1, leanRes1}}, 1},
				{"missing result", [][]string{{leanUser, leanCall1, leanRes1}, {leanUser, leanCall1, leanRes1, leanCall2}}, 1},
				{"two users across the boundary", [][]string{{leanUser}, {leanUser, leanUser2}}, 1},
				{"unknown role", [][]string{{leanUser}, {leanUser, `{"role":"robot"}`}}, 1},
				{"rewritten history", [][]string{{leanUser, leanCall1, leanRes1}, {leanUser2, leanCall1, leanRes1, leanCall2, leanRes2}, {leanUser2, leanCall1, leanRes1, leanCall2, leanRes2, leanCall1, leanRes1}}, 2},
			} {
				t.Run(c.name, func(t *testing.T) {
					tb := &errTB{TB: t}
					srv := newMock(tb, false, nil)
					srv.Lean()
					for i, msgs := range c.steps {
						srv.Push(Round{Text: "ok"})
						body := chatBodyOf(streamFirst, msgs...)
						if evs := sseEvents(t, srv.URL, body); len(evs) == 0 {
							t.Fatalf("step %d: no events", i)
						}
						errs := tb.take()
						if (len(errs) > 0) != (i == c.bad) {
							t.Errorf("step %d: errors %q, want some: %v", i, errs, i == c.bad)
						}
						reqs := srv.Requests()
						got := reqs[len(reqs)-1]
						want, stream, err := decodeChatRequest([]byte(body))
						if err == nil {
							err = llm.CheckHistory(want)
						}
						if (got.Invariant != nil) != (err != nil) || !got.Stream || !stream {
							t.Errorf("step %d: invariant %v, stream %v; whole check %v", i, got.Invariant, got.Stream, err)
						}
						if err == nil && !reflect.DeepEqual(got.Items, want) {
							t.Errorf("step %d: items %+v, want %+v", i, got.Items, want)
						}
					}
				})
			}
		})
	}
}

func TestLeanServesFaultsAndJSON(t *testing.T) {
	srv := NewChatServer(t)
	srv.Lean()
	srv.Push(Round{Fault: Fault500}, Round{Text: "whole"})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBodyOf(false, leanUser)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("status %d, want 500", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[`+leanUser+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte(`"content":"whole"`)) || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("non-streaming answer %s", b)
	}
}
