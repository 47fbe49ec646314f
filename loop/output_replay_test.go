package loop_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
)

// The recorded ObjectGeneration suites (../shared/testdata/recorded, real
// exchanges a structured-output client had with the providers) replayed
// through the engine: the structured answer is asked for from the
// recording's schema, the engine's request is compared with the recorded
// one where it matters (the format or the forced tool, the schema), and the
// answer must be the recorded one, checked and decoded.

func TestOpenAIObjectGeneration(t *testing.T) {
	replaySuite(t, "TestOpenAIObjectGeneration", "chat", llm.OutputNative)
}

func TestOpenAIResponsesObjectGeneration(t *testing.T) {
	replaySuite(t, "TestOpenAIResponsesObjectGeneration", "responses", llm.OutputNative)
}

// The compatible servers of this suite (xAI, Z.ai) were asked with a forced
// tool, as rein asks a Chat model configured with OutputTool.
func TestOpenAICompatObjectGeneration(t *testing.T) {
	replaySuite(t, "TestOpenAICompatObjectGeneration", "chat", llm.OutputTool)
}

func TestAnthropicObjectGeneration(t *testing.T) {
	replaySuite(t, "TestAnthropicObjectGeneration", "anthropic", llm.OutputTool)
}

func replaySuite(t *testing.T, suite, api string, mode llm.OutputMode) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("recorded traffic (../shared/testdata/recorded) is absent")
	}
	var files []string
	dirs, _ := filepath.Glob(filepath.Join(root, "fantasy-history", "*", "providertests", "testdata", suite))
	dirs = append(dirs, filepath.Join(root, "fantasy", "providertests", "testdata", suite))
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) == 0 {
		t.Skip("no recordings of " + suite)
	}
	sort.Strings(files)
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(strings.TrimSuffix(rel, ".yaml"), func(t *testing.T) { replayObject(t, path, api, mode) })
	}
	t.Logf("%s: %d recordings", suite, len(files))
}

func replayObject(t *testing.T, path, api string, mode llm.OutputMode) {
	rec, err := testkit.LoadRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Interactions) != 1 {
		t.Fatalf("%d interactions, want 1", len(rec.Interactions))
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(rec.Interactions[0].Request.Body), &sent); err != nil {
		t.Fatal(err)
	}
	want := recordedOutput(t, api, sent)
	stream := sent["stream"] == true
	modelName, _ := sent["model"].(string)

	srv := testkit.NewReplayer(rec)
	defer srv.Close()
	var model llm.Model
	switch api {
	case "chat":
		model = openai.NewChat(openai.Options{APIKey: "recorded", BaseURL: srv.URL + "/v1", NoStream: !stream, OutputTool: mode == llm.OutputTool})
	case "responses":
		model = openai.NewResponses(openai.Options{APIKey: "recorded", BaseURL: srv.URL + "/v1", NoStream: !stream})
	default:
		m, err := anthropic.New(anthropic.Options{APIKey: "recorded", BaseURL: srv.URL, DisableStreaming: !stream})
		if err != nil {
			t.Fatal(err)
		}
		model = m
	}
	if got := llm.OutputModeOf(model); got != mode {
		t.Fatalf("the model takes a structured answer as %q, want %q", got, mode)
	}
	e, err := loop.New(loop.Options{Model: model, ModelName: modelName, Output: want, MaxOutputTokens: 4000})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText(recordedPrompt(t, api, sent))}})
	if err != nil {
		t.Fatalf("turn failed: %v (outcome %s/%s)", err, out.Status, out.StopReason)
	}
	if out.Status != loop.StatusCompleted || out.StopReason != loop.StopFinished || out.Rounds != 1 {
		t.Errorf("outcome %s/%s in %d rounds, want completed/finished in 1", out.Status, out.StopReason, out.Rounds)
	}
	checkRecordedAnswer(t, want.Name, out.Output)

	// What went over the wire asks for the same thing as the recording.
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var ours map[string]any
	if err := json.Unmarshal(reqs[0], &ours); err != nil {
		t.Fatal(err)
	}
	got := recordedOutput(t, api, ours)
	if got.Name != want.Name || !sameJSON(got.Schema, want.Schema) {
		t.Errorf("the engine asked for %s %s, the recording for %s %s", got.Name, got.Schema, want.Name, want.Schema)
	}
}

// recordedOutput reads the structured answer a request body asks for: the
// Chat response_format, the Responses text.format, or the one tool a
// forced tool_choice names.
func recordedOutput(t *testing.T, api string, body map[string]any) *llm.Output {
	t.Helper()
	out := &llm.Output{}
	set := func(name, desc any, schema any) {
		out.Name, _ = name.(string)
		out.Description, _ = desc.(string)
		out.Schema, _ = json.Marshal(schema)
	}
	get := func(m any, keys ...string) any {
		for _, k := range keys {
			mm, _ := m.(map[string]any)
			m = mm[k]
		}
		return m
	}
	switch {
	case get(body, "response_format", "json_schema") != nil:
		js := get(body, "response_format", "json_schema")
		set(get(js, "name"), get(js, "description"), get(js, "schema"))
	case api == "responses" && get(body, "text", "format") != nil:
		f := get(body, "text", "format")
		set(get(f, "name"), get(f, "description"), get(f, "schema"))
	default:
		tools, _ := body["tools"].([]any)
		if len(tools) != 1 {
			t.Fatalf("%d tools and no response format, want the one output tool", len(tools))
		}
		forced := get(body, "tool_choice", "name")
		if api == "chat" {
			forced = get(body, "tool_choice", "function", "name")
			tl := get(tools[0], "function")
			set(get(tl, "name"), get(tl, "description"), get(tl, "parameters"))
		} else {
			set(get(tools[0], "name"), get(tools[0], "description"), get(tools[0], "input_schema"))
		}
		if forced != out.Name {
			t.Fatalf("tool_choice names %v, the tool is %s: not forced", forced, out.Name)
		}
	}
	out.Strict = llm.StrictSchema(out.Schema)
	return out
}

// recordedPrompt is the text of the recording's one user message.
func recordedPrompt(t *testing.T, api string, body map[string]any) string {
	t.Helper()
	key := "messages"
	if api == "responses" {
		key = "input"
	}
	msgs, _ := body[key].([]any)
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		if m["role"] != "user" {
			continue
		}
		switch c := m["content"].(type) {
		case string:
			return c
		case []any:
			for _, p := range c {
				if s, ok := p.(map[string]any)["text"].(string); ok {
					return s
				}
			}
		}
	}
	t.Fatal("no user message in the recording")
	return ""
}

// checkRecordedAnswer checks the answer against what each case's prompt
// asked for (the README's table of cases; fantasy's object cases).
func checkRecordedAnswer(t *testing.T, name string, raw json.RawMessage) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("output %q: %v", raw, err)
	}
	switch name {
	case "Person":
		if v["name"] != "Alice" || v["age"] != 30.0 || v["city"] != "Paris" {
			t.Errorf("Person %v, want Alice, 30, Paris", v)
		}
	case "Book":
		author, _ := v["author"].(map[string]any)
		genres, _ := v["genres"].([]any)
		title, _ := v["title"].(string)
		aname, _ := author["name"].(string)
		if !strings.Contains(title, "Lord of the Rings") || !strings.Contains(aname, "Tolkien") || v["published_year"] != 1954.0 || len(genres) == 0 {
			t.Errorf("Book %v, want The Lord of the Rings by Tolkien, 1954, with genres", v)
		}
	default:
		t.Fatalf("unknown recorded output %s", name)
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
