package anthropic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// The recorded Anthropic suites (../shared/testdata/recorded, README there):
// real Messages exchanges replayed through the adapter.
//
// TestAnthropicWebSearch and TestAnthropicComputerUse are left out of the
// full replay: their requests declare provider-defined tools (web_search,
// computer_20250124) and carry image tool results, neither of which an
// llm.Request can express. What does apply — decoding the server-tool blocks
// a response holds and replaying them unchanged — is checked by
// TestRecordedWebSearchBlocksAreKept.
var conformanceSuites = []string{
	"TestAnthropicCommon",
	"TestAnthropicCommonWithCacheControl",
	"TestAnthropicThinking",
	"TestAnthropicThinkingWithCacheControl",
}

func recordedRoot(t *testing.T) string {
	t.Helper()
	dir, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("no recorded traffic at ../shared/testdata/recorded")
	}
	return filepath.Join(dir, "fantasy", "providertests", "testdata")
}

// suiteFiles lists the recordings of a suite, by model/case name.
func suiteFiles(t *testing.T, root, suite string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(root, suite), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func TestConformanceRecorded(t *testing.T) {
	root := recordedRoot(t)
	for _, suite := range conformanceSuites {
		files := suiteFiles(t, root, suite)
		if len(files) == 0 {
			t.Errorf("%s: no recordings", suite)
			continue
		}
		pass := 0
		for _, f := range files {
			name := strings.TrimSuffix(strings.TrimPrefix(f, filepath.Join(root, suite)+"/"), ".yaml")
			if t.Run(suite+"/"+name, func(t *testing.T) { replayRecording(t, f, strings.Contains(suite, "CacheControl")) }) {
				pass++
			}
		}
		t.Logf("%s: %d/%d recordings pass", suite, pass, len(files))
	}
}

// recorded is one side of a recorded exchange, decoded.
type recorded struct {
	req  map[string]any
	resp recordedMessage
}

// recordedMessage is a recorded response, streamed or not, assembled by the
// test independently of the adapter.
type recordedMessage struct {
	Content    []map[string]any
	StopReason string
}

func loadExchanges(t *testing.T, path string) (*testkit.Recording, []recorded) {
	t.Helper()
	rec, err := testkit.LoadRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []recorded
	for i, in := range rec.Interactions {
		var r recorded
		if err := json.Unmarshal([]byte(in.Request.Body), &r.req); err != nil {
			t.Fatalf("interaction %d request: %v", i, err)
		}
		if in.Response.Code != 200 {
			t.Fatalf("interaction %d answered %d", i, in.Response.Code)
		}
		if r.req["stream"] == true {
			r.resp = assembleSSE(t, in.Response.Body)
		} else {
			var m struct {
				Content    []map[string]any `json:"content"`
				StopReason string           `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(in.Response.Body), &m); err != nil {
				t.Fatalf("interaction %d response: %v", i, err)
			}
			r.resp = recordedMessage{Content: m.Content, StopReason: m.StopReason}
		}
		out = append(out, r)
	}
	return rec, out
}

// assembleSSE builds the message a recorded event stream carries.
func assembleSSE(t *testing.T, body string) recordedMessage {
	t.Helper()
	var m recordedMessage
	inputs := map[int]*strings.Builder{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var ev struct {
			Type         string         `json:"type"`
			Index        int            `json:"index"`
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("recorded event %q: %v", data, err)
		}
		switch ev.Type {
		case "content_block_start":
			m.Content = append(m.Content, ev.ContentBlock)
		case "content_block_delta":
			b := m.Content[ev.Index]
			switch ev.Delta["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + ev.Delta["text"].(string)
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + ev.Delta["thinking"].(string)
			case "signature_delta":
				b["signature"] = b["signature"].(string) + ev.Delta["signature"].(string)
			case "input_json_delta":
				if inputs[ev.Index] == nil {
					inputs[ev.Index] = &strings.Builder{}
				}
				inputs[ev.Index].WriteString(ev.Delta["partial_json"].(string))
			}
		case "message_delta":
			if s, ok := ev.Delta["stop_reason"].(string); ok {
				m.StopReason = s
			}
		}
	}
	for i, in := range inputs {
		var v any
		if err := json.Unmarshal([]byte(in.String()), &v); err != nil {
			t.Fatalf("recorded input of block %d: %v", i, err)
		}
		m.Content[i]["input"] = v
	}
	return m
}

// requestFrom rebuilds the llm.Request and options the recording client
// expressed in its first request.
func requestFrom(t *testing.T, body map[string]any, cache bool) (*llm.Request, Options) {
	t.Helper()
	req := &llm.Request{ToolChoice: llm.ToolChoiceAuto}
	opts := Options{Model: body["model"].(string), PromptCache: cache, DisableStreaming: body["stream"] != true}
	if n, ok := body["max_tokens"].(float64); ok {
		req.MaxOutputTokens = int(n)
	}
	if th, ok := body["thinking"].(map[string]any); ok && th["type"] == "enabled" {
		opts.ThinkingBudget = int(th["budget_tokens"].(float64))
	}
	for _, s := range asList(body["system"]) {
		req.System += s.(map[string]any)["text"].(string)
	}
	for _, msg := range asList(body["messages"]) {
		m := msg.(map[string]any)
		if m["role"] != "user" {
			t.Fatalf("first request holds a %v message", m["role"])
		}
		for _, b := range blocksOf(m["content"]) {
			req.Items = append(req.Items, llm.UserText(b["text"].(string)))
		}
	}
	for _, tl := range asList(body["tools"]) {
		tm := tl.(map[string]any)
		if tm["type"] == "web_search_20250305" {
			req.Tools = append(req.Tools, llm.ToolSpec{Name: tm["name"].(string), Builtin: llm.BuiltinWebSearch})
			continue
		}
		schema, _ := json.Marshal(tm["input_schema"])
		desc, _ := tm["description"].(string)
		req.Tools = append(req.Tools, llm.ToolSpec{Name: tm["name"].(string), Description: desc, Schema: schema})
	}
	if tc, ok := body["tool_choice"].(map[string]any); ok {
		req.ParallelCalls = tc["disable_parallel_tool_use"] != true
	}
	return req, opts
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func blocksOf(content any) []map[string]any {
	if s, ok := content.(string); ok {
		return []map[string]any{{"type": "text", "text": s}}
	}
	var out []map[string]any
	for _, b := range asList(content) {
		out = append(out, b.(map[string]any))
	}
	return out
}

// replayRecording serves a recording and drives the adapter through it the
// way the engine would: round one, the tools' results, round two.
func replayRecording(t *testing.T, path string, cache bool) {
	rec, ex := loadExchanges(t, path)
	rp := testkit.NewReplayer(rec)
	defer rp.Close()
	req, opts := requestFrom(t, ex[0].req, cache)
	opts.BaseURL = rp.URL
	opts.APIKey = "recorded"
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}

	history := req.Items
	for round := range ex {
		req.Items = history
		if err := llm.CheckHistory(history); err != nil {
			t.Fatalf("round %d: history breaks the invariants: %v", round+1, err)
		}
		events, resp, err := run(t, m, req)
		if err != nil {
			t.Fatalf("round %d: %v", round+1, err)
		}
		sent := rp.Requests()
		if len(sent) != round+1 {
			t.Fatalf("round %d: the server saw %d requests", round+1, len(sent))
		}
		compareRequests(t, round+1, sent[round], ex[round].req)
		checkResponse(t, round+1, events, resp, ex[round].resp)

		calls := (&llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}).Calls()
		if round == len(ex)-1 {
			if len(calls) != 0 {
				t.Errorf("last round made %d calls, want an answer", len(calls))
			}
			checkAnswer(t, path, textOf(resp))
			return
		}
		if len(calls) == 0 {
			t.Fatalf("round %d made no call but the recording goes on", round+1)
		}
		history = append(history, llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts})
		for _, c := range calls {
			history = append(history, llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: runTool(t, c), Status: llm.ResultOK}))
		}
	}
}

// runTool answers like the recording client's tools did.
func runTool(t *testing.T, c *llm.Call) string {
	t.Helper()
	out, err := answerCall(c.Name, c.Args)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// answerCall runs the recorded tools: weather answers "40 C" for Florence,
// add and multiply compute.
func answerCall(name, argsText string) (string, error) {
	var args map[string]any
	if err := json.Unmarshal([]byte(argsText), &args); err != nil {
		return "", fmt.Errorf("call %s: arguments %q: %w", name, argsText, err)
	}
	switch name {
	case "weather":
		if loc, _ := args["location"].(string); !strings.Contains(loc, "Florence") {
			return "", fmt.Errorf("weather location = %q, want Florence", loc)
		}
		return "40 C", nil
	case "add", "multiply":
		a, aok := args["a"].(float64)
		b, bok := args["b"].(float64)
		if !aok || !bok {
			return "", fmt.Errorf("%s arguments %v are not two numbers", name, args)
		}
		if name == "add" {
			return fmt.Sprint(a + b), nil
		}
		return fmt.Sprint(a * b), nil
	}
	return "", fmt.Errorf("call to unknown tool %q", name)
}

func textOf(r *llm.Response) string {
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Kind == llm.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func checkAnswer(t *testing.T, path, text string) {
	t.Helper()
	var want []string
	switch base := filepath.Base(path); {
	case strings.HasPrefix(base, "simple"):
		want = []string{"Olá"}
	case strings.HasPrefix(base, "multi_tool"):
		want = []string{"5", "6"}
	default:
		want = []string{"Florence", "40"}
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("answer %q does not mention %q", text, w)
		}
	}
}

// checkResponse compares what the adapter made of a response with the
// recorded response, block by block, and checks the events agree with it.
func checkResponse(t *testing.T, round int, events []llm.Event, resp *llm.Response, rec recordedMessage) {
	t.Helper()
	var want []llm.Part
	for _, b := range rec.Content {
		switch b["type"] {
		case "text":
			if s := b["text"].(string); s != "" {
				want = append(want, llm.Part{Kind: llm.PartText, Text: s})
			}
		case "thinking":
			want = append(want, llm.Part{Kind: llm.PartReasoning, Text: b["thinking"].(string),
				Opaque: &llm.Opaque{Provider: "anthropic", Signature: b["signature"].(string)}})
		case "redacted_thinking":
			want = append(want, llm.Part{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic", Encrypted: b["data"].(string)}})
		case "tool_use":
			want = append(want, llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: b["id"].(string), Name: b["name"].(string), Args: canonical(t, b["input"])}})
		default:
			t.Fatalf("round %d: recorded block type %v", round, b["type"])
		}
	}
	got := make([]llm.Part, len(resp.Parts))
	copy(got, resp.Parts)
	for i, p := range got {
		if p.Kind == llm.PartCall {
			c := *p.Call
			c.Args = canonical(t, json.RawMessage(c.Args))
			got[i].Call = &c
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round %d: parts\n got %s\nwant %s", round, show(got), show(want))
	}
	if resp.RawFinish != rec.StopReason {
		t.Errorf("round %d: raw finish %q, want %q", round, resp.RawFinish, rec.StopReason)
	}
	wantFinish := map[string]llm.FinishReason{"end_turn": llm.FinishStop, "tool_use": llm.FinishToolCalls}[rec.StopReason]
	if resp.Finish != wantFinish {
		t.Errorf("round %d: finish %q, want %q", round, resp.Finish, wantFinish)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
		t.Errorf("round %d: usage %+v has no counts", round, resp.Usage)
	}
	s := summarize(events)
	var reasoning string
	var calls []llm.Call
	for _, p := range resp.Parts {
		switch p.Kind {
		case llm.PartReasoning:
			reasoning += p.Text
		case llm.PartCall:
			calls = append(calls, *p.Call)
		}
	}
	if s.Text != strings.TrimSpace(textOf(resp)) || s.Reasoning != reasoning {
		t.Errorf("round %d: events show text %q and reasoning %q; the response holds %q and %q", round, s.Text, s.Reasoning, textOf(resp), reasoning)
	}
	if !reflect.DeepEqual(s.Calls, calls) {
		t.Errorf("round %d: call events %+v, response calls %+v", round, s.Calls, calls)
	}
}

// canonical returns JSON text with sorted keys, so arguments compare by
// value.
func canonical(t *testing.T, v any) string {
	t.Helper()
	if raw, ok := v.(json.RawMessage); ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("arguments %s: %v", raw, err)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// compareRequests checks the request the adapter sent against the one the
// recording client sent, by meaning: the same model, limits, system prompt,
// tools, tool choice, thinking and stream flag, and the same messages block
// by block — thinking with its signature, tool_use with its id and input,
// tool_result paired with its tool_use id — with the same cache breakpoints.
func compareRequests(t *testing.T, round int, sentBody []byte, rec map[string]any) {
	t.Helper()
	var sent map[string]any
	if err := json.Unmarshal(sentBody, &sent); err != nil {
		t.Fatalf("round %d: the adapter sent %s: %v", round, sentBody, err)
	}
	got, want := normalizeRequest(sent), normalizeRequest(rec)
	for _, k := range []string{"model", "max_tokens", "stream", "system", "tools", "tool_choice", "thinking", "messages"} {
		if !reflect.DeepEqual(got[k], want[k]) {
			g, _ := json.Marshal(got[k])
			w, _ := json.Marshal(want[k])
			t.Errorf("round %d: request %s\n got %s\nwant %s", round, k, g, w)
		}
	}
	if _, _, _, err := testkit.DecodeAnthropicRequest(sentBody); err != nil {
		t.Errorf("round %d: the request breaks the API's rules: %v", round, err)
	}
}

// normalizeRequest keeps the fields that carry meaning, with defaults made
// explicit and string content written as blocks.
func normalizeRequest(body map[string]any) map[string]any {
	out := map[string]any{
		"model":       body["model"],
		"max_tokens":  body["max_tokens"],
		"stream":      body["stream"] == true,
		"tool_choice": body["tool_choice"],
		"thinking":    body["thinking"],
	}
	var system []any
	for _, s := range blocksOf(body["system"]) {
		system = append(system, s)
	}
	out["system"] = system
	out["tools"] = append([]any(nil), asList(body["tools"])...)
	var msgs []any
	for _, msg := range asList(body["messages"]) {
		m := msg.(map[string]any)
		var blocks []any
		for _, b := range blocksOf(m["content"]) {
			nb := map[string]any{}
			for k, v := range b {
				if k == "is_error" && v == false {
					continue
				}
				nb[k] = v
			}
			blocks = append(blocks, nb)
		}
		msgs = append(msgs, map[string]any{"role": m["role"], "content": blocks})
	}
	out["messages"] = msgs
	return out
}

// TestRecordedWebSearchBlocksAreKept replays the web search recordings as far
// as they apply: the server_tool_use and web_search_tool_result blocks of a
// response are kept, and a later turn sends them back unchanged beside the
// text, as the recording client did.
func TestRecordedWebSearchBlocksAreKept(t *testing.T) {
	root := recordedRoot(t)
	for _, name := range []string{"generate", "stream"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(root, "TestAnthropicWebSearch", name+".yaml")
			rec, ex := loadExchanges(t, path)
			rp := testkit.NewReplayer(rec)
			defer rp.Close()
			req, opts := requestFrom(t, ex[0].req, false)
			opts.BaseURL, opts.APIKey = rp.URL, "recorded"
			m, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			var history []llm.Item
			for i := range ex {
				if i > 0 {
					// The follow-up turn: the recorded user text after
					// the first answer.
					msgs := asList(ex[i].req["messages"])
					last := msgs[len(msgs)-1].(map[string]any)
					history = append(history, llm.UserText(blocksOf(last["content"])[0]["text"].(string)))
				} else {
					history = append(history, req.Items...)
				}
				req.Items = history
				_, resp, err := run(t, m, req)
				if err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
				var kept []string
				for _, p := range resp.Parts {
					if p.Kind == llm.PartReasoning && p.Opaque != nil && len(p.Opaque.Raw) > 0 {
						var b struct{ Type string }
						json.Unmarshal(p.Opaque.Raw, &b)
						kept = append(kept, b.Type)
					}
				}
				if want := []string{"server_tool_use", "web_search_tool_result"}; !reflect.DeepEqual(kept, want) {
					t.Errorf("turn %d: kept blocks %v, want %v", i+1, kept, want)
				}
				if textOf(resp) == "" || resp.Finish != llm.FinishStop {
					t.Errorf("turn %d: answer %q, finish %q", i+1, textOf(resp), resp.Finish)
				}
				history = append(history, llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts})
				var sent map[string]any
				json.Unmarshal(rp.Requests()[i], &sent)
				// The server tool is offered as the recording client did.
				if !reflect.DeepEqual(sent["tools"], ex[i].req["tools"]) {
					t.Errorf("turn %d: tools sent %v, recorded %v", i+1, sent["tools"], ex[i].req["tools"])
				}
				if i == 0 {
					continue
				}
				got, want := serverBlocks(sent), serverBlocks(ex[i].req)
				if !reflect.DeepEqual(got, want) {
					g, _ := json.Marshal(got)
					w, _ := json.Marshal(want)
					t.Errorf("turn %d: server tool blocks sent back\n got %s\nwant %s", i+1, g, w)
				}
				if g, w := sentText(sent), sentText(ex[i].req); g != w {
					t.Errorf("turn %d: assistant text sent back\n got %q\nwant %q", i+1, g, w)
				}
			}
		})
	}
}

// serverBlocks returns the provider-executed tool blocks of the assistant
// messages of a request. The caller field and null fields, which the
// recording client left out and the API accepts either way, are not
// compared.
func serverBlocks(body map[string]any) []any {
	var out []any
	for _, msg := range asList(body["messages"]) {
		m := msg.(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		for _, b := range blocksOf(m["content"]) {
			if b["type"] == "server_tool_use" || b["type"] == "web_search_tool_result" {
				c := map[string]any{}
				for k, v := range b {
					if k != "caller" {
						c[k] = v
					}
				}
				out = append(out, withoutNulls(c))
			}
		}
	}
	return out
}

// sentText concatenates the text blocks of the assistant messages.
func sentText(body map[string]any) string {
	var s strings.Builder
	for _, msg := range asList(body["messages"]) {
		m := msg.(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		for _, b := range blocksOf(m["content"]) {
			if b["type"] == "text" {
				s.WriteString(b["text"].(string))
			}
		}
	}
	return s.String()
}

func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				m[k] = withoutNulls(e)
			}
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = withoutNulls(e)
		}
		return l
	}
	return v
}
