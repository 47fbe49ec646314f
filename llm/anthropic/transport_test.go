package anthropic

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// sent is a request as the server received it.
type sent struct {
	method, path string
	header       http.Header
	body         []byte
}

// capture is a handler that records the requests and answers each with
// answer.
type capture struct {
	mu     sync.Mutex
	reqs   []sent
	answer http.HandlerFunc
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, sent{r.Method, r.URL.Path, r.Header.Clone(), body})
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.answer(w, r)
}

// callRunOf makes one call and reads it to its end; an error from Stream
// counts as one from the first Recv (the SDK's streaming call returned its
// errors there).
func callRunOf(ctx context.Context, m llm.Model, req *llm.Request) callRun {
	s, err := m.Stream(ctx, req)
	if err != nil {
		var r callRun
		r.err, r.text = errDesc(err)
		return r
	}
	return drainRun(s)
}

// callBoth makes the same call through the adapter and through the SDK's
// client, against one server, and returns what each produced.
func callBoth(t *testing.T, h http.Handler, opts Options, req *llm.Request) (got, want callRun) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	opts.BaseURL = srv.URL
	if opts.Model == "" {
		opts.Model = "claude-sonnet-4-5"
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	return callRunOf(ctx, m, req), callRunOf(ctx, newSDKModel(m), req)
}

// answerOK answers with a short text response, streamed or not as asked.
func answerOK(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(sseBody(evStart, evText, evTextDelta, evStop0, evMsgDelta, evMsgStop))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Olá"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
}

// TestRequestsMatchSDK checks that the adapter sends what the SDK's client
// sent: the same method, path and body, byte for byte, and the same headers
// but for the SDK's own identification (User-Agent, X-Stainless-*).
func TestRequestsMatchSDK(t *testing.T) {
	temp, zero := 0.7, 0.0
	history := []llm.Item{
		llm.UserText("Weather in Florence?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			{Kind: llm.PartReasoning, Text: "t", Opaque: &llm.Opaque{Provider: Provider, Signature: "sig"}},
			{Kind: llm.PartText, Text: "Checking."},
			{Kind: llm.PartCall, Call: callWeather},
		}},
		llm.ToolResult(llm.Result{CallID: "toolu_1", Name: "weather", Content: "40 C", Status: llm.ResultOK}),
	}
	cases := []struct {
		name string
		opts Options
		req  llm.Request
	}{
		{"plain", Options{}, llm.Request{Items: []llm.Item{llm.UserText("hi")}}},
		{"temperature", Options{}, llm.Request{System: "Be terse.", Items: []llm.Item{llm.UserText("hi")}, Temperature: &temp}},
		{"zero temperature", Options{}, llm.Request{Items: []llm.Item{llm.UserText("hi")}, Temperature: &zero}},
		{"tools and history", Options{}, llm.Request{Items: history, Tools: weatherTools, ParallelCalls: true}},
		{"thinking drops the temperature", Options{ThinkingBudget: 2048}, llm.Request{Items: history, Tools: weatherTools, Temperature: &temp}},
		{"prompt cache", Options{PromptCache: true}, llm.Request{System: "sys", Items: history, Tools: weatherTools}},
		{"text tools", Options{TextTools: true}, llm.Request{Items: history, Tools: weatherTools, Temperature: &temp}},
		{"html in the text", Options{}, llm.Request{Items: []llm.Item{llm.UserText("<b>a & b</b> \u2028")}}},
		{"no API key", Options{APIKey: "-"}, llm.Request{Items: []llm.Item{llm.UserText("hi")}}},
	}
	for _, tc := range cases {
		for _, noSSE := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", tc.name, noSSE), func(t *testing.T) {
				c := &capture{answer: answerOK}
				opts := tc.opts
				opts.DisableStreaming = noSSE
				if opts.APIKey == "-" {
					// The SDK sends "Bearer " with no key; the adapter
					// sends no Authorization at all, compared below.
					opts.APIKey = ""
					t.Setenv("ANTHROPIC_API_KEY", "")
				} else {
					opts.APIKey = "sk-test"
				}
				got, want := callBoth(t, c, opts, &tc.req)
				if err := sameRun(got, want); err != nil {
					t.Fatal(err)
				}
				if len(c.reqs) != 2 {
					t.Fatalf("%d requests", len(c.reqs))
				}
				ours, sdks := c.reqs[0], c.reqs[1]
				if ours.method != sdks.method || ours.path != sdks.path {
					t.Errorf("%s %s, SDK %s %s", ours.method, ours.path, sdks.method, sdks.path)
				}
				if !bytes.Equal(ours.body, sdks.body) {
					t.Errorf("body\n  %s\nSDK\n  %s", ours.body, sdks.body)
				}
				if got, want := comparable(ours.header), comparable(sdks.header); !reflect.DeepEqual(got, want) {
					if tc.opts.APIKey == "-" && want.Get("Authorization") == "Bearer" && got.Get("Authorization") == "" {
						want.Del("Authorization")
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("headers\n  %v\nSDK\n  %v", got, want)
					}
				}
				if ours.header.Get("User-Agent") != "rein" {
					t.Errorf("User-Agent %q", ours.header.Get("User-Agent"))
				}
			})
		}
	}
}

// comparable drops the headers by which the SDK identifies itself.
func comparable(h http.Header) http.Header {
	out := h.Clone()
	for k := range out {
		if k == "User-Agent" || strings.HasPrefix(k, "X-Stainless-") {
			delete(out, k)
		}
	}
	return out
}

// TestErrorsMatchSDK sends calls the server refuses or breaks, in every way
// the mock server and a few hand-made answers have, through the adapter and
// through the SDK's client: the errors, every field and the text, must be
// equal.
func TestErrorsMatchSDK(t *testing.T) {
	req := &llm.Request{Items: []llm.Item{llm.UserText("hi")}, Tools: weatherTools}
	answer := func(status int, header map[string]string, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	jsonType := map[string]string{"Content-Type": "application/json", "request-id": "req_1"}
	// Texts that differ on purpose: the adapter says what was wrong with
	// a 200 that is not JSON in its own words.
	const notJSON = "the SDK's words for a body that is not JSON"
	cases := []struct {
		name string
		h    http.HandlerFunc
		text string // why the error's text may differ, when it may
	}{
		{"413 request_too_large", answer(413, jsonType, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`), ""},
		{"400 prompt too long", answer(400, jsonType, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208244 tokens > 200000 maximum"}}`), ""},
		{"400 other", answer(400, jsonType, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"},"request_id":"req_2"}`), ""},
		{"404 not_found_error", answer(404, jsonType, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`), ""},
		{"429 with both retry headers", answer(429, map[string]string{"Content-Type": "application/json", "retry-after": "7", "retry-after-ms": "1500"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`), ""},
		{"500 plain text", answer(500, map[string]string{"Content-Type": "text/plain"}, "oops"), ""},
		{"502 html", answer(502, map[string]string{"Content-Type": "text/html"}, "<html>502 Bad Gateway</html>"), ""},
		{"503 empty", answer(503, nil, ""), ""},
		{"529 overloaded", answer(529, jsonType, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), ""},
		{"400 a JSON array", answer(400, jsonType, `[1,2]`), ""},
		{"400 error as a string", answer(400, jsonType, `{"error":"bad"}`), ""},
		{"400 values of other types", answer(400, jsonType, `{"type":"error","error":{"type":5,"message":{"a":1}}}`), ""},
		{"401 with details", answer(401, jsonType, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key","details":{"error_code":"invalid_key"}}}`), ""},
		{"200 not JSON", answer(200, map[string]string{"Content-Type": "text/html"}, "<html>login</html>"), notJSON},
		{"200 broken JSON", answer(200, jsonType, `{"id":"msg_1","content":[`), ""},
		{"200 JSON then garbage", answer(200, jsonType, `{"id":"msg_1","type":"message","model":"m","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn"} trailing`), ""},
		{"200 error body", answer(200, jsonType, `{"type":"error","error":{"type":"api_error","message":"boom"}}`), ""},
		{"200 stream with an error event and retry-after", answer(200, map[string]string{"Content-Type": "text/event-stream", "retry-after": "3"}, string(sseBody(evStart, evText, evTextDelta, evOverloaded))), notJSON},
	}
	for _, tc := range cases {
		for _, noSSE := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", tc.name, noSSE), func(t *testing.T) {
				got, want := callBoth(t, tc.h, Options{APIKey: "k", DisableStreaming: noSSE}, req)
				same := sameRun
				if tc.text != "" && noSSE {
					same = sameRunButText
				}
				if err := same(got, want); err != nil {
					t.Error(err)
				}
			})
		}
	}

	faults := []testkit.AnthropicRound{
		{Round: testkit.Round{Fault: testkit.Fault429, RetryAfter: "2"}, RetryAfterMs: "250"},
		{Round: testkit.Round{Fault: testkit.Fault500}},
		{Round: testkit.Round{Fault: testkit.Fault502}},
		{Round: testkit.Round{Fault: testkit.Fault503}},
		{Round: testkit.Round{Fault: testkit.FaultOverloaded}},
		{Round: testkit.Round{Fault: testkit.FaultUnauthorized}},
		{Round: testkit.Round{Fault: testkit.FaultContextLength}},
		{Round: testkit.Round{Fault: testkit.FaultResetBeforeOutput}},
		{Round: testkit.Round{Text: "Hello there, friend", Fault: testkit.FaultResetAfterOutput}},
		{Round: testkit.Round{Text: "Hello", Fault: testkit.FaultNoTerminal}},
		{Round: testkit.Round{Text: "Hello there", Fault: testkit.FaultMalformedLine}},
		{Round: testkit.Round{Text: "Hello there", Fault: testkit.FaultStreamError}},
		{Round: testkit.Round{Text: "Hi", Reasoning: "think", Calls: []testkit.MockCall{{ID: "toolu_r", Name: "weather", Args: `{"location":"Rome"}`}}}, Signature: "sig"},
	}
	for i, f := range faults {
		for _, noSSE := range []bool{false, true} {
			t.Run(fmt.Sprintf("mock round %d fault %v/json=%v", i, f.Fault, noSSE), func(t *testing.T) {
				srv := testkit.NewAnthropicServer(t, f, f)
				m, err := New(Options{BaseURL: srv.BaseURL(), APIKey: "k", Model: "claude-mock", DisableStreaming: noSSE})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				got, want := callRunOf(ctx, m, req), callRunOf(ctx, newSDKModel(m), req)
				same := sameRun
				if f.Fault == testkit.FaultResetBeforeOutput || f.Fault == testkit.FaultResetAfterOutput {
					// A broken body is named by internal/sse
					// ("sse: unexpected EOF").
					same = sameRunButText
				}
				if err := same(got, want); err != nil {
					t.Error(err)
				}
			})
		}
	}

	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		for _, noSSE := range []bool{false, true} {
			m, _ := New(Options{BaseURL: srv.URL, APIKey: "k", Model: "m", DisableStreaming: noSSE})
			ctx := context.Background()
			got, want := callRunOf(ctx, m, req), callRunOf(ctx, newSDKModel(m), req)
			if err := sameRun(got, want); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("canceled before the call", func(t *testing.T) {
		for _, noSSE := range []bool{false, true} {
			c := &capture{answer: answerOK}
			srv := httptest.NewServer(c)
			m, _ := New(Options{BaseURL: srv.URL, APIKey: "k", Model: "m", DisableStreaming: noSSE})
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			got, want := callRunOf(ctx, m, req), callRunOf(ctx, newSDKModel(m), req)
			if err := sameRun(got, want); err != nil {
				t.Error(err)
			}
			srv.Close()
		}
	})
}

// TestRecordedResponsesMatchSDK serves every recorded Messages response,
// streamed and not, to the adapter and to the SDK's client: the events must
// be equal.
func TestRecordedResponsesMatchSDK(t *testing.T) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("no recorded traffic at ../shared/testdata/recorded")
	}
	var streamed, whole int
	req := &llm.Request{Items: []llm.Item{llm.UserText("hi")}, Tools: weatherTools}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		rec, err := testkit.LoadRecording(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range rec.Interactions {
			if !strings.HasSuffix(in.Request.URL, "/v1/messages") {
				continue
			}
			resp := in.Response
			stream := isEventStream(resp.Headers)
			if stream {
				streamed++
			} else {
				whole++
			}
			h := func(w http.ResponseWriter, r *http.Request) {
				for k, vs := range resp.Headers {
					for _, v := range vs {
						w.Header().Add(k, v)
					}
				}
				w.Header().Del("Content-Length")
				w.WriteHeader(resp.Code)
				io.WriteString(w, resp.Body)
			}
			got, want := callBoth(t, http.HandlerFunc(h), Options{APIKey: "k", DisableStreaming: !stream}, req)
			if err := sameRun(got, want); err != nil {
				t.Errorf("%s#%d: %v", strings.TrimPrefix(path, root), i, err)
			}
		}
		return nil
	})
	if streamed == 0 || whole == 0 {
		t.Fatalf("%d streamed and %d whole recorded responses: the recordings moved", streamed, whole)
	}
	t.Logf("%d streamed and %d whole recorded responses read the same as through the SDK's client", streamed, whole)
}
