package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
)

// callRun is what a call produced: its events and the error that ended it,
// described by errDesc: its fields, and its text apart.
type callRun struct {
	events    []llm.Event
	err, text string
}

var localAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// errDesc describes an error for comparison: every field of an *llm.Error,
// and apart its text, with local addresses (which differ between
// connections) masked; "" for none. The text of a JSON syntax error is not
// compared: the SDK's decoder kept a newline after an event's data, so
// encoding/json names a different character in the same broken event.
func errDesc(err error) (fields, text string) {
	if err == nil {
		return "", ""
	}
	text = localAddr.ReplaceAllString(err.Error(), "ADDR")
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		text = "JSON syntax error"
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		return "untyped", text
	}
	var se *sdk.Error
	return fmt.Sprintf("%s status=%d code=%q message=%q shown=%v retry=%v sdkError=%v",
		le.Kind, le.Status, le.Code, le.Message, le.Shown, le.RetryAfter, errors.As(err, &se)), text
}

// drainRun reads a stream to its end or its error.
func drainRun(s llm.Stream) callRun {
	var r callRun
	defer s.Close()
	for {
		ev, err := s.Recv()
		if err == io.EOF {
			return r
		}
		if err != nil {
			r.err, r.text = errDesc(err)
			return r
		}
		r.events = append(r.events, ev)
	}
}

// streamResponse is a 200 event-stream response with body, as a client
// returns it.
func streamResponse(body []byte, header http.Header) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages", nil)
	if header == nil {
		header = http.Header{"Content-Type": {"text/event-stream"}}
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}
}

// readStreamBoth reads an event-stream body through the adapter's reader and
// through the SDK's decoder and union type.
func readStreamBoth(body []byte, header http.Header) (got, want callRun) {
	ctx := context.Background()
	got = drainRun(newSSEStream(ctx, streamResponse(body, header), weatherTools))
	old := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(streamResponse(body, header)), nil)
	want = drainRun(newSDKSSEStream(ctx, old, weatherTools))
	return got, want
}

// sameRun reports how two runs differ.
func sameRun(got, want callRun) error {
	if got.text != want.text {
		return fmt.Errorf("error text\n  %s\nSDK reference\n  %s", got.text, want.text)
	}
	return sameRunButText(got, want)
}

// sameRunButText is sameRun but for the error's text.
func sameRunButText(got, want callRun) error {
	if got.err != want.err {
		return fmt.Errorf("error\n  %s\nSDK reference\n  %s", got.err, want.err)
	}
	if !reflect.DeepEqual(got.events, want.events) {
		for i := range min(len(got.events), len(want.events)) {
			if !reflect.DeepEqual(got.events[i], want.events[i]) {
				return fmt.Errorf("event %d: %s, SDK reference %s", i, showEvent(got.events[i]), showEvent(want.events[i]))
			}
		}
		return fmt.Errorf("%d events, SDK reference %d", len(got.events), len(want.events))
	}
	return nil
}

func showEvent(ev llm.Event) string {
	b, _ := json.Marshal(ev)
	return string(b)
}

func isEventStream(h map[string][]string) bool {
	for k, vs := range h {
		if strings.EqualFold(k, "Content-Type") {
			for _, v := range vs {
				if strings.HasPrefix(v, "text/event-stream") {
					return true
				}
			}
		}
	}
	return false
}

// TestEventsMatchSDKOnRecordings reads every recorded Messages stream through
// the adapter's reader and through the SDK's decoder and union type, as the
// adapter read them before: the events and the error must be equal. Each
// stream is also read cut after every event, which must end the same way.
func TestEventsMatchSDKOnRecordings(t *testing.T) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("no recorded traffic at ../shared/testdata/recorded")
	}
	var streams, events, fast, cuts int
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		rec, err := testkit.LoadRecording(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range rec.Interactions {
			if !strings.HasSuffix(in.Request.URL, "/v1/messages") || in.Response.Code != 200 || !isEventStream(in.Response.Headers) {
				continue
			}
			name := fmt.Sprintf("%s#%d", strings.TrimPrefix(path, root), i)
			streams++
			body := []byte(in.Response.Body)
			got, want := readStreamBoth(body, nil)
			if err := sameRun(got, want); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if len(got.events) == 0 || got.err != "" {
				t.Errorf("%s: %d events, error %q: want a whole response", name, len(got.events), got.err)
			}
			// The stream cut at each event boundary.
			for _, end := range eventEnds(body) {
				cuts++
				got, want := readStreamBoth(body[:end], nil)
				if err := sameRun(got, want); err != nil {
					t.Errorf("%s cut at byte %d: %v", name, end, err)
				}
			}
			r := sse.NewReader(bytes.NewReader(body))
			for r.Next() {
				events++
				// Every recorded event but ping must take the gjson
				// path, or the comparison above proves little.
				if ev := string(r.Event()); ev != "ping" {
					var a assembler
					a.init(nil)
					if read, _ := a.readEvent(gjson.ParseBytes(r.Data())); read {
						fast++
					} else {
						t.Errorf("%s: event %s left to the SDK: %s", name, ev, r.Data())
					}
				}
			}
		}
		return nil
	})
	if streams == 0 {
		t.Fatal("no recorded Anthropic stream found: the recordings moved")
	}
	t.Logf("%d Anthropic streams (%d events, %d of them read with gjson; %d cut streams) read the same as through the SDK", streams, events, fast, cuts)
}

// eventEnds returns the offsets just past each blank line of an event
// stream: the ends of its events.
func eventEnds(body []byte) []int {
	var ends []int
	for i := 0; i+1 < len(body); i++ {
		if body[i] == '\n' && (body[i+1] == '\n' || (body[i+1] == '\r' && i+2 < len(body) && body[i+2] == '\n')) {
			end := i + 2
			if body[i+1] == '\r' {
				end++
			}
			ends = append(ends, end)
		}
	}
	return ends
}

// sse joins events into a stream body: each is "name data", or "data" alone
// for an event without a name.
func sseBody(events ...string) []byte {
	var b strings.Builder
	for _, e := range events {
		name, data, ok := strings.Cut(e, " ")
		if !ok || strings.HasPrefix(e, "{") {
			name, data = "", e
		}
		if name != "" {
			b.WriteString("event: " + name + "\n")
		}
		b.WriteString("data: " + data + "\n\n")
	}
	return []byte(b.String())
}

// Events of a call, as the API sends them.
const (
	evStart      = `message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":3,"cache_read_input_tokens":40,"output_tokens":1}}}`
	evText       = `content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evTextDelta  = `content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Olá"}}`
	evStop0      = `content_block_stop {"type":"content_block_stop","index":0}`
	evUse        = `content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`
	evUseDelta   = `content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":\"Rome\"}"}}`
	evStop1      = `content_block_stop {"type":"content_block_stop","index":1}`
	evMsgDelta   = `message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`
	evMsgStop    = `message_stop {"type":"message_stop"}`
	evPing       = `ping {"type": "ping"}`
	evOverloaded = `error {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
)

// TestEventShapesMatchSDK covers what the recordings lack: errors, unusual
// framing and unusual values, which the adapter must read as the SDK did.
func TestEventShapesMatchSDK(t *testing.T) {
	whole := []string{evStart, evText, evTextDelta, evStop0, evUse, evUseDelta, evStop1, evMsgDelta, evMsgStop}
	with := func(i int, evs ...string) []string {
		out := append([]string(nil), whole[:i]...)
		out = append(out, evs...)
		return append(out, whole[i:]...)
	}
	cases := []struct {
		name string
		body []byte
	}{
		{"whole", sseBody(whole...)},
		{"pings and unnamed events are skipped", sseBody(with(2, evPing, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unnamed"}}`)...)},
		{"error event after text", sseBody(with(3, evOverloaded)...)},
		{"error event first", sseBody(evOverloaded)},
		{"error event of an unknown type", sseBody(with(3, `error {"type":"error","error":{"type":"new_error","message":"m"}}`)...)},
		{"error event not JSON", sseBody(with(3, `error upstream gave up`)...)},
		{"error event empty", []byte("event: error\ndata:\n\n")},
		{"error event a JSON array", sseBody(`error [1,2]`)},
		{"malformed data", sseBody(with(3, `content_block_delta {"type":"content_block_delta","index":0,"delta":`)...)},
		{"cut without message_stop", sseBody(whole[:5]...)},
		{"cut mid-event", sseBody(whole...)[:200]},
		{"CRLF, comments and other fields", []byte(strings.ReplaceAll(": keep-alive\nid: 7\nretry: 100\n"+string(sseBody(whole...)), "\n", "\r\n"))},
		{"data over two lines", []byte("event: message_start\ndata: {\"type\":\"message_start\",\ndata: \"message\":{\"id\":\"m\"}}\n\n" + string(sseBody(whole[1:]...)))},
		{"event name other than the type", sseBody(with(2, `message_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"named otherwise"}}`)...)},
		{"error typed data under another name is ignored", sseBody(with(2, `message_delta {"type":"error","error":{"type":"overloaded_error","message":"x"}}`)...)},
		{"unknown event type", sseBody(with(2, `future {"type":"future_event","index":0}`)...)},
		{"event without data", []byte("event: message_delta\n\n" + string(sseBody(whole...)))},
		{"empty data", []byte("event: content_block_delta\ndata:\n\n" + string(sseBody(whole...)))},
		{"thinking with signature", sseBody(evStart,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
			evStop0, evMsgDelta, evMsgStop)},
		{"redacted thinking", sseBody(evStart,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}`,
			evStop0, evMsgDelta, evMsgStop)},
		{"server tool use streams its input", sseBody(evStart,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"go\"}"}}`,
			evStop0,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev","title":"Go"}]}}`,
			evStop1, evMsgDelta, evMsgStop)},
		{"text with citations", sseBody(evStart, evText,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://go.dev","cited_text":"Go"}}}`,
			evTextDelta, evStop0, evMsgDelta, evMsgStop)},
		{"text block starting with text", sseBody(evStart, `content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi "}}`, evTextDelta, evStop0, evMsgDelta, evMsgStop)},
		{"usage in message_delta, some null", sseBody(evStart, evText, evTextDelta, evStop0,
			`message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":null,"cache_read_input_tokens":7,"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}`, evMsgStop)},
		{"thinking tokens in message_start", sseBody(`message_start {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":2,"output_tokens_details":{"thinking_tokens":3}}}}`, evMsgStop)},
		{"escaped strings", sseBody(evStart, evText, `content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"\\\u00e9\n\ud83d\ude00\/"}}`, evStop0, evMsgStop)},
		{"escaped keys", sseBody(evStart, evText, `content_block_delta {"t\u0079pe":"content_block_delta","index":0,"delta":{"type":"text_delta","te\u0078t":"x"}}`, evStop0, evMsgStop)},
		{"repeated keys", sseBody(evStart, evText, `content_block_delta {"type":"content_block_delta","index":0,"index":5,"delta":{"type":"text_delta","text":"first","text":"second"},"delta":{"type":"thinking_delta"}}`, evStop0, evMsgStop)},
		{"values of other types", sseBody(evStart, evText,
			`content_block_delta {"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":5}}`,
			`content_block_delta {"type":"content_block_delta","index":0.0,"delta":{"type":"text_delta","text":true}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":{"a":1}}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":"text"}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":null}`,
			`message_delta {"type":"message_delta","delta":{"stop_reason":1},"usage":{"output_tokens":"12"}}`,
			evStop0, evMsgStop)},
		{"null everywhere", sseBody(`message_start {"type":"message_start","message":null}`,
			`content_block_start {"type":"content_block_start","index":null,"content_block":{"type":"text","text":null}}`,
			`content_block_delta {"type":"content_block_delta","index":null,"delta":{"type":"text_delta","text":null}}`,
			`content_block_stop {"type":"content_block_stop","index":null}`,
			`message_delta {"type":"message_delta","delta":null,"usage":null}`, evMsgStop)},
		{"type not a string", sseBody(evStart, `content_block_delta {"type":5}`, `x [1,2]`, `y "text"`, `z null`, evMsgStop)},
		{"delta for a block never started", sseBody(evStart, `content_block_delta {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`)},
		{"text delta for a tool_use block", sseBody(evStart, evText, evStop0, evUse, `content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}`)},
		{"block out of order", sseBody(evStart, evUse)},
		{"block before message_start", sseBody(evText)},
		{"message_stop with a block open", sseBody(evStart, evText, evMsgStop)},
		{"delta after the block stopped", sseBody(evStart, evText, evStop0, evTextDelta)},
		{"huge index", sseBody(evStart, `content_block_delta {"type":"content_block_delta","index":99999999999999999999,"delta":{"type":"text_delta","text":"x"}}`)},
		{"negative index", sseBody(evStart, `content_block_stop {"type":"content_block_stop","index":-1}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := readStreamBoth(tc.body, nil)
			if err := sameRun(got, want); err != nil {
				t.Error(err)
			}
		})
	}
}

// Events that open one block of each kind, and close them and the message,
// around a fuzzed event.
var (
	fuzzPrelude = []string{
		`{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":1,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
	}
	fuzzEpilogue = []string{
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`,
		`{"type":"message_stop"}`,
	}
)

// readDataBoth reads the events' data through the adapter's reader and
// through the SDK's union type, as the SDK's stream decoded each event's
// data, each on a fresh assembler, up to the first error.
func readDataBoth(events [][]byte) (got, want callRun) {
	read := func(run *callRun, read func(a *assembler, data []byte) error) {
		var a assembler
		a.init(weatherTools)
		for _, data := range events {
			err := read(&a, data)
			for ev, ok := a.next(); ok; ev, ok = a.next() {
				run.events = append(run.events, ev)
			}
			if err != nil {
				markShown(err, a.shown)
				run.err, run.text = errDesc(err)
				return
			}
		}
	}
	read(&got, (*assembler).data)
	read(&want, func(a *assembler, data []byte) error {
		var ev sdk.MessageStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil {
			return mapError(context.Background(), err, a.shown)
		}
		return a.event(&ev)
	})
	return got, want
}

// FuzzEventData reads an arbitrary event, amid the events of a call with a
// block of each kind open, through the adapter's reader and through the
// SDK's union type: the events and errors must be equal.
func FuzzEventData(f *testing.F) {
	for _, e := range []string{evTextDelta, evUseDelta, evStop0, evMsgDelta, evMsgStop, evStart, evUse, evText} {
		_, data, _ := strings.Cut(e, " ")
		f.Add([]byte(data))
	}
	for _, s := range []string{
		`{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}`,
		`{"type":"content_block_delta","index":"2","delta":{"type":"input_json_delta","partial_json":7}}`,
		`{"type":"content_block_start","index":4,"content_block":{"type":"web_search_tool_result","content":[]}}`,
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":null,"output_tokens_details":{"thinking_tokens":2}}}`,
		`{"t\u0079pe":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var events [][]byte
		for _, e := range fuzzPrelude {
			events = append(events, []byte(e))
		}
		events = append(events, data)
		for _, e := range fuzzEpilogue {
			events = append(events, []byte(e))
		}
		got, want := readDataBoth(events)
		if err := sameRun(got, want); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
	})
}

// FuzzEventStream reads an arbitrary event-stream body through the adapter's
// reader and the SDK's decoder. It allows the two framings internal/sse reads
// otherwise than the SDK's decoder, neither of which the API sends (see
// framingDiffers).
func FuzzEventStream(f *testing.F) {
	f.Add(sseBody(evStart, evText, evTextDelta, evPing, evStop0, evUse, evUseDelta, evStop1, evMsgDelta, evMsgStop))
	f.Add(sseBody(evStart, evText, evTextDelta, evOverloaded))
	f.Add([]byte("event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n: c\r\nevent: message_stop\r\ndata:{\"type\":\"message_stop\"}\r\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if framingDiffers(body) {
			t.Skip()
		}
		got, want := readStreamBoth(body, nil)
		if err := sameRun(got, want); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

// framingDiffers reports whether body holds one of the two framings
// internal/sse reads otherwise than the SDK's decoder:
//
//   - an event named "error" with no data line at all, which internal/sse
//     does not dispatch (an event without data is no event, by the
//     standard) and the SDK's decoder reads as an error without a body;
//   - a body ending in a lone CR, which the SDK's line scanner reads as a
//     last blank line that dispatches the event before it, and internal/sse
//     (which splits lines at LF) as a cut line.
func framingDiffers(body []byte) bool {
	if bytes.HasSuffix(body, []byte("\r")) {
		return true
	}
	event, data := "", false
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			if event == "error" && !data {
				return true
			}
			event, data = "", false
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			event = value
		case "data":
			data = true
		}
	}
	return false
}
