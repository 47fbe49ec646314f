package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
)

// chunkRun is what one way of reading a response produced.
type chunkRun struct {
	events []llm.Event
	errs   []string
}

// readBoth reads the chunks (or, whole, the one completion body) through
// readBody and through the SDK reference, each on a fresh assembler.
func readBoth(chunks [][]byte, whole bool) (got, want chunkRun) {
	ctx := context.Background()
	a := newChatAssembler(ctx, "p", nil)
	b := newChatAssembler(ctx, "p", nil)
	emitA := func(ev llm.Event) { got.events = append(got.events, ev) }
	emitB := func(ev llm.Event) { want.events = append(want.events, ev) }
	if whole {
		got.errs = append(got.errs, errKind(a.readJSON(bytes.NewReader(chunks[0]), emitA)))
		want.errs = append(want.errs, errKind(b.sdkReadJSON(bytes.NewReader(chunks[0]), emitB)))
		return got, want
	}
	for _, c := range chunks {
		got.errs = append(got.errs, errKind(a.readBody(c, false, emitA)))
		want.errs = append(want.errs, errKind(b.sdkReadChunk(c, emitB)))
	}
	a.finishResponse(emitA)
	b.finishResponse(emitB)
	return got, want
}

// errKind describes an error for comparison: its kind, code and message;
// "" for none or the end of the stream.
func errKind(err error) string {
	if err == nil || err == io.EOF {
		return ""
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return fmt.Sprintf("%s %s %q", le.Kind, le.Code, le.Message)
	}
	return err.Error()
}

// sameRun compares two runs, with call ids the assembler made up (for calls
// that came without one) treated as equal.
func sameRun(got, want chunkRun, data []byte) error {
	if !reflect.DeepEqual(got.errs, want.errs) {
		return fmt.Errorf("errors %q, SDK reference %q", got.errs, want.errs)
	}
	norm := func(evs []llm.Event) []llm.Event {
		out := make([]llm.Event, len(evs))
		for i, ev := range evs {
			if ev.Call != nil && !bytes.Contains(data, []byte(ev.Call.ID)) {
				c := *ev.Call
				c.ID = "made-up"
				ev.Call = &c
			}
			if ev.Response != nil {
				r := *ev.Response
				r.Parts = append([]llm.Part(nil), r.Parts...)
				for j := range r.Parts {
					if c := r.Parts[j].Call; c != nil && !bytes.Contains(data, []byte(c.ID)) {
						cc := *c
						cc.ID = "made-up"
						r.Parts[j].Call = &cc
					}
				}
				ev.Response = &r
			}
			out[i] = ev
		}
		return out
	}
	g, w := norm(got.events), norm(want.events)
	if !reflect.DeepEqual(g, w) {
		for i := range min(len(g), len(w)) {
			if !reflect.DeepEqual(g[i], w[i]) {
				return fmt.Errorf("event %d: %s, SDK reference %s", i, describe(g[i]), describe(w[i]))
			}
		}
		return fmt.Errorf("%d events, SDK reference %d", len(g), len(w))
	}
	return nil
}

func describe(ev llm.Event) string {
	s := fmt.Sprintf("%+v delta %q", ev, ev.Delta)
	if ev.Call != nil {
		s += fmt.Sprintf(" call %+v", *ev.Call)
	}
	if ev.Usage != nil {
		s += fmt.Sprintf(" usage %+v", *ev.Usage)
	}
	if ev.Response != nil {
		s += fmt.Sprintf(" response %+v", *ev.Response)
	}
	return s
}

// TestChatChunksMatchSDKOnRecordings reads every recorded Chat Completions
// response, streamed and whole, through readBody and through the SDK's
// types: the events, the errors and the finished response must be equal.
func TestChatChunksMatchSDKOnRecordings(t *testing.T) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("../shared/testdata/recorded is absent")
	}
	var files []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return nil
	})
	var streams, bodies, chunks int
	for _, f := range files {
		rec, err := testkit.LoadRecording(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range rec.Interactions {
			if !strings.HasSuffix(in.Request.URL, "/chat/completions") || in.Response.Code != 200 {
				continue
			}
			name := fmt.Sprintf("%s#%d", strings.TrimPrefix(f, root), i)
			body := []byte(in.Response.Body)
			if !isEventStream(in.Response.Headers) {
				bodies++
				if err := sameRun(readBothWhole(body)); err != nil {
					t.Errorf("%s (whole body): %v", name, err)
				}
				continue
			}
			streams++
			var cs [][]byte
			r := sse.NewReader(bytes.NewReader(body))
			for r.Next() {
				if bytes.HasPrefix(r.Data(), []byte("[DONE]")) {
					break
				}
				cs = append(cs, bytes.Clone(r.Data()))
			}
			chunks += len(cs)
			got, want := readBoth(cs, false)
			if err := sameRun(got, want, body); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if streams == 0 || bodies == 0 {
		t.Fatalf("found %d streams and %d whole bodies: the recordings moved", streams, bodies)
	}
	t.Logf("%d streams (%d chunks) and %d whole bodies read the same as through the SDK", streams, chunks, bodies)
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

func readBothWhole(body []byte) (chunkRun, chunkRun, []byte) {
	got, want := readBoth([][]byte{body}, true)
	return got, want, body
}

// TestChatChunkShapes covers shapes the recordings lack, each read the
// same as through the SDK.
func TestChatChunkShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
	}{
		{"reasoning_content then content", []string{
			`{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"answer"},"finish_reason":"stop"}]}`,
		}},
		{"both reasoning fields keep the first", []string{
			`{"choices":[{"index":0,"delta":{"reasoning":"a","reasoning_content":"a"}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning_content":"b","reasoning":"b"}}]}`,
		}},
		{"reasoning_details merged by index", []string{
			`{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","index":0,"text":"a"}]}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","index":0,"text":"b","signature":"s"}]}}]}`,
		}},
		{"call fragments without ids after the first", []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"add","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}},{"index":1,"id":"c2","function":{"name":"mul","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		}},
		{"a call without an id gets one", []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"add","arguments":"{}"}}]}}]}`,
		}},
		{"other choices ignored", []string{
			`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
		}},
		{"usage with cache details", []string{
			`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}}`,
		}},
		{"null usage and null fields", []string{
			`{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":null}],"usage":null}`,
		}},
		{"escaped strings", []string{
			`{"choices":[{"index":0,"delta":{"content":"a\"b\\n\u00e9\ud83d\ude00 <tag>"}}]}`,
		}},
		{"error inside the stream", []string{
			`{"error":{"message":"overloaded","type":"server_error","code":"server_is_overloaded"}}`,
		}},
		{"null error is no error", []string{
			`{"error":null,"choices":[{"index":0,"delta":{"content":"ok"}}]}`,
		}},
		{"a null chunk", []string{`null`}},
		{"malformed", []string{`{"choices":[`}},
		{"model changes", []string{`{"model":"a","choices":[]}`, `{"model":"b","choices":[]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs [][]byte
			for _, c := range tc.chunks {
				cs = append(cs, []byte(c))
			}
			got, want := readBoth(cs, false)
			if fix := sdkFixes[tc.name]; fix != nil {
				fix(&want)
			}
			if err := sameRun(got, want, []byte(strings.Join(tc.chunks, ""))); err != nil {
				t.Error(err)
			}
			if len(got.events) == 0 && tc.name != "a null chunk" && tc.name != "malformed" && tc.name != "error inside the stream" {
				t.Error("no events: the case tests nothing")
			}
		})
	}
}

// sdkFixes correct the SDK reference where it was wrong.
var sdkFixes = map[string]func(want *chunkRun){
	"usage with cache details": func(want *chunkRun) {
		// The SDK path never saw OpenRouter's cache_write_tokens: the SDK's
		// PromptTokensDetails keeps no unknown fields.
		for _, ev := range want.events {
			if ev.Usage != nil {
				ev.Usage.CacheWriteTokens = 3
			}
			if ev.Response != nil {
				ev.Response.Usage.CacheWriteTokens = 3
			}
		}
	},
}

// FuzzChatChunk reads arbitrary chunks through readBody and the SDK
// reference. Where the SDK accepts the chunk, both must yield the same
// events; readBody must never panic.
func FuzzChatChunk(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"r","tool_calls":[{"index":0,"id":"c","function":{"name":"n","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1}}`,
		`{"error":{"message":"m","code":429}}`,
		`{"model":"m","choices":[{"index":0,"delta":{"reasoning_details":[{"type":"t","index":0,"text":"x"}]}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := readBoth([][]byte{data}, false)
		if want.errs[0] != "" {
			return // the SDK refused it; readBody only must not panic
		}
		if !typedContent(data) {
			// The SDK reads a non-string content as its JSON text ("[]"
			// as the answer); readBody leaves it out. No reference there:
			// readBody only must not panic.
			return
		}
		if err := sameRun(got, want, data); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
	})
}

// typedContent says whether every choice's delta content in the chunk is
// a string or null, the types the Chat Completions stream defines.
func typedContent(data []byte) bool {
	ok := true
	gjson.GetBytes(data, "choices").ForEach(func(_, c gjson.Result) bool {
		if v := c.Get("delta.content"); v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			ok = false
		}
		return ok
	})
	return ok
}
