package openai

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
)

// readEventsBoth reads a Responses stream's events through readData and
// through the SDK reference, each on a fresh assembler.
func readEventsBoth(events [][]byte) (got, want chunkRun) {
	ctx := context.Background()
	newA := func() *responsesAssembler {
		return &responsesAssembler{ctx: ctx, provider: "p", text: newTextPath(nil), calls: make(map[int64]*callAcc)}
	}
	a, b := newA(), newA()
	emitA := func(ev llm.Event) { got.events = append(got.events, ev) }
	emitB := func(ev llm.Event) { want.events = append(want.events, ev) }
	for _, e := range events {
		got.errs = append(got.errs, errKind(a.readData(e, emitA)))
		want.errs = append(want.errs, errKind(b.sdkReadData(e, emitB)))
	}
	return got, want
}

// TestResponsesEventsMatchSDKOnRecordings reads every recorded Responses
// stream through readData and through the SDK's union type alone: the
// events, errors and finished response must be equal.
func TestResponsesEventsMatchSDKOnRecordings(t *testing.T) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("../shared/testdata/recorded is absent")
	}
	var streams, events int
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		rec, err := testkit.LoadRecording(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range rec.Interactions {
			if !strings.HasSuffix(in.Request.URL, "/responses") || in.Response.Code != 200 || !isEventStream(in.Response.Headers) {
				continue
			}
			streams++
			var es [][]byte
			r := sse.NewReader(strings.NewReader(in.Response.Body))
			for r.Next() {
				es = append(es, bytes.Clone(r.Data()))
			}
			events += len(es)
			got, want := readEventsBoth(es)
			if err := sameRun(got, want, []byte(in.Response.Body)); err != nil {
				t.Errorf("%s#%d: %v", strings.TrimPrefix(path, root), i, err)
			}
			if len(got.events) == 0 {
				t.Errorf("%s#%d: no events", strings.TrimPrefix(path, root), i)
			}
		}
		return nil
	})
	if streams == 0 {
		t.Fatal("no recorded Responses stream found: the recordings moved")
	}
	t.Logf("%d Responses streams (%d events) read the same as through the SDK", streams, events)
}

// TestResponsesEventShapes covers what the recordings lack.
func TestResponsesEventShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
	}{
		{"malformed", []string{`{"type":"response.output_text.delta","delta":`}},
		{"unknown types ignored", []string{`{"type":"response.content_part.added","item_id":"x"}`, `{"type":"future.event"}`}},
		{"delta of a call not started", []string{`{"type":"response.function_call_arguments.delta","output_index":3,"delta":"{}"}`}},
		{"second summary part", []string{`{"type":"response.reasoning_summary_part.added","summary_index":1}`, `{"type":"response.reasoning_summary_text.delta","delta":"b"}`}},
		{"error event", []string{`{"type":"error","code":"rate_limit_exceeded","message":"slow down"}`}},
		{"failed", []string{`{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}`}},
		{"escaped delta", []string{`{"type":"response.output_text.delta","delta":"a\"\u00e9\n"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var es [][]byte
			for _, e := range tc.events {
				es = append(es, []byte(e))
			}
			got, want := readEventsBoth(es)
			if err := sameRun(got, want, []byte(strings.Join(tc.events, ""))); err != nil {
				t.Error(err)
			}
			if !reflect.DeepEqual(got.errs, want.errs) {
				t.Errorf("errors %q, want %q", got.errs, want.errs)
			}
		})
	}
}
