package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/think"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// The engine conformance replays the same recordings as the adapter
// conformance, but lets the turn engine drive them: it builds the requests,
// runs real tools of the recorded names and decides when the turn ends. What
// the engine sent is then compared with what the recording client sent.

func TestEngineConformanceChat(t *testing.T) { runEngineConformance(t, "chat", chatSuites) }
func TestEngineConformanceResponses(t *testing.T) {
	runEngineConformance(t, "responses", responsesSuites)
}

// engineCases are the recorded cases driven through the engine; other files
// of a suite (structured output, web search) exercise features the engine
// does not have.
var engineCases = []string{"simple", "tool", "multi_tool", "thinking"}

func engineCase(name string) bool {
	base := name[strings.LastIndexByte(name, '/')+1:]
	base = strings.TrimSuffix(strings.TrimSuffix(base, "_streaming"), "-streaming")
	for _, c := range engineCases {
		if base == c {
			return true
		}
	}
	return false
}

func runEngineConformance(t *testing.T, api string, suites []string) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("recorded traffic (../shared/testdata/recorded) is absent")
	}
	var pass, total int
	for _, suite := range suites {
		t.Run(suite, func(t *testing.T) {
			files := recordedFiles(t, root, suite)
			names := make([]string, 0, len(files))
			for n := range files {
				if engineCase(n) {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				t.Skip("no recordings")
			}
			sort.Strings(names)
			var p, n int
			for _, name := range names {
				rec, err := testkit.LoadRecording(files[name])
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(rec.Interactions[0].Request.URL, endpointOf(api)) {
					continue
				}
				n++
				if t.Run(name, func(t *testing.T) { replayThroughEngine(t, api, rec) }) {
					p++
				}
			}
			t.Logf("%s: %d/%d recordings pass through the engine", suite, p, n)
			pass += p
			total += n
		})
	}
	t.Logf("%s: %d/%d recordings pass through the engine", api, pass, total)
}

// replayThroughEngine runs one recording as a turn of the engine.
func replayThroughEngine(t *testing.T, api string, rec *testkit.Recording) {
	srv := testkit.NewReplayer(rec)
	defer srv.Close()

	first := decodeObject(t, rec.Interactions[0].Request.Body)
	opts := openai.Options{APIKey: "test", BaseURL: srv.URL + "/v1", NoStream: first["stream"] != true}
	req := requestFrom(t, api, first, &opts)
	var model llm.Model
	if api == "chat" {
		model = openai.NewChat(opts)
	} else {
		model = openai.NewResponses(opts)
	}
	checked := &checkingModel{Model: model}
	var tools []tool.Tool
	for _, s := range req.Tools {
		tools = append(tools, recordedTool(t, s.Name))
	}
	e, err := loop.New(loop.Options{
		Model:           checked,
		ModelName:       req.Model,
		System:          req.System,
		Tools:           tool.NewSet(tools...),
		MaxOutputTokens: req.MaxOutputTokens,
	})
	if err != nil {
		t.Fatal(err)
	}
	input := []llm.Item{llm.UserText(req.Items[0].Text())}
	out, err := e.Run(context.Background(), loop.Turn{Input: input})
	if err != nil {
		t.Fatalf("turn failed: %v (outcome %+v)", err, out)
	}
	for _, err := range checked.problems() {
		t.Error(err)
	}

	rounds := len(rec.Interactions)
	if out.Status != loop.StatusCompleted || out.StopReason != loop.StopFinished {
		t.Errorf("outcome %s/%s, want completed/finished", out.Status, out.StopReason)
	}
	if out.Rounds != rounds || out.ToolSteps != rounds-1 {
		t.Errorf("rounds %d, tool steps %d; want %d and %d", out.Rounds, out.ToolSteps, rounds, rounds-1)
	}

	// The calls the engine ran are the calls the recording client ran.
	var calls []*llm.Call
	for i := range out.Items {
		if out.Items[i].Role == llm.RoleAssistant {
			calls = append(calls, out.Items[i].Calls()...)
		}
	}
	var want []recordedCall
	if rounds > 1 {
		want = recordedCalls(t, api, decodeObject(t, rec.Interactions[1].Request.Body))
	}
	if len(calls) != len(want) {
		t.Fatalf("the engine ran %d calls, the recording %d", len(calls), len(want))
	}
	for i, c := range calls {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
			t.Fatalf("call %d %s: arguments %q: %v", i, c.Name, c.Args, err)
		}
		if c.ID != want[i].id || c.Name != want[i].name || !reflect.DeepEqual(args, want[i].args) {
			t.Errorf("call %d = %s %s %v, recorded %s %s %v", i, c.ID, c.Name, args, want[i].id, want[i].name, want[i].args)
		}
	}

	// The answer is the final recorded text, without inline reasoning.
	final := strings.TrimSpace(think.Strip(recordedText(t, api, rec.Interactions[rounds-1].Response.Body), think.Options{}))
	if final == "" {
		t.Fatal("the recording's final response has no text")
	}
	if !strings.Contains(out.Answer, final) {
		t.Errorf("answer %q, recorded final text %q", out.Answer, final)
	}
	for _, w := range wantInAnswer(calls) {
		if !strings.Contains(out.Answer, w) {
			t.Errorf("answer %q lacks %q", out.Answer, w)
		}
	}

	// What went over the wire: every request keeps the invariants, and the
	// second one carries calls, results and reasoning as the recording
	// client's did (the provider accepted that one).
	sent := srv.Requests()
	if len(sent) != rounds {
		t.Fatalf("server received %d requests, want %d", len(sent), rounds)
	}
	for i, body := range sent {
		items, err := testkit.WireHistory(api == "responses", body)
		if err == nil {
			err = llm.CheckHistory(items)
		}
		if err != nil {
			t.Errorf("request %d on the wire: %v", i+1, err)
		}
	}
	if rounds > 1 {
		compareSecondRequest(t, api, decodeObject(t, string(sent[1])), decodeObject(t, rec.Interactions[1].Request.Body), calls)
	}
}

// checkingModel checks the history invariants on every request the engine
// makes, before it goes to the adapter.
type checkingModel struct {
	llm.Model
	mu   sync.Mutex
	errs []error
}

func (m *checkingModel) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	if err := llm.CheckHistory(req.Items); err != nil {
		m.mu.Lock()
		m.errs = append(m.errs, fmt.Errorf("round %d request: %w", req.Round, err))
		m.mu.Unlock()
	}
	return m.Model.Stream(ctx, req)
}

func (m *checkingModel) problems() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]error(nil), m.errs...)
}

// recordedTool returns a real tool answering as the recording client's
// tools did: weather says "40 C", add and multiply compute.
func recordedTool(t *testing.T, name string) tool.Tool {
	type weatherIn struct {
		Location string `json:"location" jsonschema:"the city"`
	}
	type numbersIn struct {
		A int64 `json:"a" jsonschema:"first number"`
		B int64 `json:"b" jsonschema:"second number"`
	}
	read := tool.WithAccess(tool.ReadOnly)
	switch name {
	case "weather":
		return tool.New("weather", "Get weather information for a location", func(_ context.Context, in weatherIn) (tool.Output, error) {
			return tool.Text("40 C"), nil
		}, read)
	case "add":
		return tool.New("add", "Add two numbers", func(_ context.Context, in numbersIn) (tool.Output, error) {
			return tool.Textf("%d", in.A+in.B), nil
		}, read)
	case "multiply":
		return tool.New("multiply", "Multiply two numbers", func(_ context.Context, in numbersIn) (tool.Output, error) {
			return tool.Textf("%d", in.A*in.B), nil
		}, read)
	}
	t.Fatalf("the recording offers an unknown tool %q", name)
	return nil
}

// recordedText returns the visible text of a recorded response body, JSON
// or server-sent events, as the provider wrote it.
func recordedText(t *testing.T, api, body string) string {
	t.Helper()
	var b strings.Builder
	add := func(v map[string]any) {
		if api == "chat" {
			choices, _ := v["choices"].([]any)
			for _, c := range choices {
				c, _ := c.(map[string]any)
				for _, k := range []string{"message", "delta"} {
					if m, ok := c[k].(map[string]any); ok {
						s, _ := m["content"].(string)
						b.WriteString(s)
					}
				}
			}
			return
		}
		if v["type"] == "response.output_text.delta" {
			s, _ := v["delta"].(string)
			b.WriteString(s)
			return
		}
		if _, ok := v["type"]; ok {
			return // other stream events repeat what the deltas said
		}
		out, _ := v["output"].([]any)
		for _, it := range out {
			it, _ := it.(map[string]any)
			if it["type"] != "message" {
				continue
			}
			parts, _ := it["content"].([]any)
			for _, p := range parts {
				p, _ := p.(map[string]any)
				if p["type"] == "output_text" {
					s, _ := p["text"].(string)
					b.WriteString(s)
				}
			}
		}
	}
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		add(decodeObject(t, body))
		return b.String()
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		data = strings.TrimSpace(data)
		if !ok || data == "[DONE]" || data == "" {
			continue
		}
		var v map[string]any
		if json.Unmarshal([]byte(data), &v) == nil {
			add(v)
		}
	}
	return b.String()
}
