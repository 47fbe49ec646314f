package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
)

// refusingServer answers the first request with status and body, as a
// local server that will not take tool definitions does, and passes the
// rest to mock.
func refusingServer(t *testing.T, status int, contentType, body string, mock *testkit.MockServer) *httptest.Server {
	t.Helper()
	var refused atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused.CompareAndSwap(false, true) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			w.Write([]byte(body))
			return
		}
		mock.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The wordings are the servers' own (see refusesTools).
var toolRefusals = []struct {
	name, contentType, body string
	status                  int
}{
	{"ollama", "application/json", `{"error":{"message":"registry.ollama.ai/library/gemma3:4b does not support tools","type":"api_error","param":null,"code":null}}`, 400},
	{"ollama native, two capabilities missing", "application/json", `{"error":"gemma3:4b does not support tools\nthinking"}`, 400},
	{"llama.cpp without --jinja", "application/json", `{"error":{"code":400,"message":"tools param requires --jinja flag","type":"invalid_request_error"}}`, 400},
	{"llama.cpp without --jinja, older build", "application/json", `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`, 500},
	{"llama.cpp, plain text", "text/plain", "tools param requires --jinja flag\n", 400},
	{"llama.cpp that cannot stream tools", "application/json", `{"error":{"code":500,"message":"Cannot use tools with stream","type":"server_error"}}`, 500},
	{"vllm without a tool parser", "application/json", `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}`, 400},
}

// TestPlainTextRefusalSwitchesToTextMode: a server that refuses tool
// definitions in its own words gets the turn in text tool mode — one
// switch, the request sent again, the mode kept for the next turn, and
// one warning.
func TestPlainTextRefusalSwitchesToTextMode(t *testing.T) {
	for _, tt := range toolRefusals {
		t.Run(tt.name, func(t *testing.T) {
			mock := testkit.NewChatServer(t,
				testkit.Round{Text: dsmlRound},
				testkit.Round{Text: textModeAnswer},
				testkit.Round{Text: "Still 40 C."},
			)
			srv := refusingServer(t, tt.status, tt.contentType, tt.body, mock)
			var mu sync.Mutex
			var warned []error
			chat := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.URL, Model: "m", ToolsRefused: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				warned = append(warned, err)
			}})
			e := textModeEngine(t, chat)
			out, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("Weather in Florence, and 2+3?")}})
			checkTextModeTurn(t, out, err)
			if !chat.TextTools() {
				t.Error("the model did not stay in text tool mode")
			}
			history := append([]llm.Item{llm.UserText("Weather in Florence, and 2+3?")}, out.Items...)
			if out, err := e.Run(context.Background(), loop.Turn{History: history, Input: []llm.Item{llm.UserText("And now?")}}); err != nil || out.Answer != "Still 40 C." {
				t.Fatalf("second turn: %v, %+v", err, out)
			}
			reqs := mock.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests after the refusal, want 3", len(reqs))
			}
			for _, r := range reqs {
				checkTextModeRequest(t, r)
			}
			if len(warned) != 1 || !errors.Is(warned[0], llm.ToolsUnsupported) {
				t.Errorf("warned %v, want the refusal once", warned)
			}
		})
	}
}

// TestOtherBadRequestsAreNotRefusals: 400s that are not a refusal of tools
// — even ones that speak of tools — are returned as they are: no switch,
// no second request.
func TestOtherBadRequestsAreNotRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		status     int
		kind       llm.ErrorKind
	}{
		{"a bad tool schema", `{"error":{"message":"Invalid schema for function 'weather': tools are not supported with this schema","type":"invalid_request_error"}}`, 400, llm.BadRequest},
		{"prose naming a tool", `{"error":{"message":"the weather tool does not support tools"}}`, 400, llm.BadRequest},
		{"the refusal's words inside another message", `{"error":{"message":"upstream said: tools param requires --jinja flag"}}`, 400, llm.BadRequest},
		{"a server error", `{"error":{"message":"registry.ollama.ai/library/gemma3:4b does not support tools"}}`, 503, llm.ServerError},
		{"a context overflow", `{"error":{"message":"tools param requires --jinja flag","code":"context_length_exceeded"}}`, 400, llm.ContextWindowExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mock := testkit.NewChatServer(t, testkit.Round{Text: "unused"})
			srv := refusingServer(t, tt.status, "application/json", tt.body, mock)
			chat := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.URL, Model: "m", ToolsRefused: func(err error) { t.Errorf("switched on %v", err) }})
			_, err := chat.Stream(context.Background(), &llm.Request{
				Items: []llm.Item{llm.UserText("hi")},
				Tools: []llm.ToolSpec{{Name: "weather", Schema: json.RawMessage(`{"type":"object"}`)}},
			})
			if !errors.Is(err, tt.kind) || errors.Is(err, llm.ToolsUnsupported) {
				t.Errorf("error %v: want %s, not tools unsupported", err, tt.kind)
			}
			if chat.TextTools() || len(mock.Requests()) != 0 {
				t.Errorf("switched to text mode (%v) or sent again (%d requests)", chat.TextTools(), len(mock.Requests()))
			}
		})
	}
}
