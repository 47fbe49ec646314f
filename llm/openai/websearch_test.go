package openai_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
)

// TestRecordedWebSearch replays the TestOpenAIWebSearch recordings: the
// provider's search is offered as {"type":"web_search"} as the recording
// client sent it, the web_search_call item of the answer is kept as
// returned beside the cited text, and a later request sends it back
// unchanged when responses are stored — and not at all without store,
// since the API refuses item ids it did not store.
func TestRecordedWebSearch(t *testing.T) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("recorded traffic (../shared/testdata/recorded) is absent")
	}
	for _, name := range []string{"generate", "stream"} {
		t.Run(name, func(t *testing.T) {
			rec, err := testkit.LoadRecording(filepath.Join(root, "fantasy", "providertests", "testdata", "TestOpenAIWebSearch", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			first := decodeObject(t, rec.Interactions[0].Request.Body)
			srv := testkit.NewReplayer(rec)
			defer srv.Close()
			opts := openai.Options{APIKey: "test", BaseURL: srv.URL + "/v1", NoStream: first["stream"] != true}
			req := requestFrom(t, "responses", first, &opts)
			if want := []llm.ToolSpec{{Name: "web_search", Builtin: llm.BuiltinWebSearch}}; !reflect.DeepEqual(req.Tools, want) {
				t.Fatalf("tools %+v", req.Tools)
			}
			req.ToolChoice, req.ParallelCalls = llm.ToolChoiceAuto, false
			m := openai.NewResponses(opts)
			if err := openai.CheckResponsesBody(m, req, !opts.NoStream); err != nil {
				t.Error(err)
			}
			resp, evs := run(t, context.Background(), m, req)
			checkEvents(t, resp, evs)

			var sent map[string]any
			json.Unmarshal(srv.Requests()[0], &sent)
			if !reflect.DeepEqual(sent["tools"], first["tools"]) {
				t.Errorf("tools sent %v, recorded %v", sent["tools"], first["tools"])
			}
			if len(callsOf(resp)) != 0 || resp.Finish != llm.FinishStop {
				t.Fatalf("calls %v, finish %q: the provider ran the search", callsOf(resp), resp.Finish)
			}
			if answer := textOf(resp); !strings.Contains(answer, "Tokyo") {
				t.Errorf("answer %q", answer)
			}
			var kept []json.RawMessage
			for _, p := range resp.Parts {
				if p.Kind == llm.PartReasoning && p.Opaque != nil && strings.Contains(string(p.Opaque.Raw), `"web_search_call"`) {
					kept = append(kept, p.Opaque.Raw)
				}
			}
			recorded := recordedSearchCalls(t, rec.Interactions[0].Response.Body, !opts.NoStream)
			if len(kept) != len(recorded) || len(kept) == 0 {
				t.Fatalf("kept %d web_search_call items, the answer has %d", len(kept), len(recorded))
			}
			for i := range kept {
				if !reflect.DeepEqual(decodeObject(t, string(kept[i])), recorded[i]) {
					t.Errorf("kept %s\nreturned %v", kept[i], recorded[i])
				}
			}

			// A later request, with and without store.
			history := append(append([]llm.Item(nil), req.Items...),
				llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}, llm.UserText("And Osaka?"))
			for _, store := range []bool{true, false} {
				o := opts
				o.Store = store
				next := *req
				next.Items = history
				m := openai.NewResponses(o)
				if err := openai.CheckResponsesBody(m, &next, false); err != nil {
					t.Errorf("store %v: %v", store, err)
				}
				body := decodeObject(t, string(openai.ResponsesBodyForTest(t, m, &next)))
				var back []any
				for _, it := range body["input"].([]any) {
					if it.(map[string]any)["type"] == "web_search_call" {
						back = append(back, it)
					}
				}
				switch {
				case store && !reflect.DeepEqual(back, anySlice(recorded)):
					t.Errorf("store: sent back %v, returned %v", back, recorded)
				case !store && len(back) != 0:
					t.Errorf("without store: sent back %v", back)
				}
			}
		})
	}
}

func anySlice(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// recordedSearchCalls returns the web_search_call items of a recorded
// answer: the output of the response, or of the stream's completed event.
func recordedSearchCalls(t *testing.T, body string, stream bool) []map[string]any {
	t.Helper()
	var resp map[string]any
	if !stream {
		resp = decodeObject(t, body)
	} else {
		for _, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			ev := decodeObject(t, data)
			if ev["type"] == "response.completed" {
				resp = ev["response"].(map[string]any)
			}
		}
	}
	var out []map[string]any
	for _, it := range resp["output"].([]any) {
		if m := it.(map[string]any); m["type"] == "web_search_call" {
			out = append(out, m)
		}
	}
	return out
}
