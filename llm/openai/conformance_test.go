package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/think"
)

// The recorded suites by wire protocol (see the README of the recorded
// folder). History folders hold older models of the same suites, DeepSeek
// among them.
var (
	chatSuites = []string{
		"TestOpenAICommon", "TestOpenAICompatibleCommon", "TestOpenRouterCommon",
		"TestVercelCommon", "TestAzureCommon", "TestOpenAICompatibleThinking",
		"TestOpenRouterThinking", "TestAzureThinking", "TestVercelThinking",
		"TestOpenRouterCommonWithAnthropicCache", "TestVercelCommonWithAnthropicCache",
	}
	responsesSuites = []string{
		"TestOpenAIResponsesCommon", "TestOpenAIResponsesWithSummaryThinking",
		"TestAzureResponsesCommon", "TestAzureResponsesWithSummaryThinking",
	}
)

// recordedFiles lists the recordings of a suite: the current ones and those
// of every history snapshot, keyed by a short name for subtests.
func recordedFiles(t *testing.T, root, suite string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dirs := map[string]string{"": filepath.Join(root, "fantasy", "providertests", "testdata", suite)}
	snaps, _ := filepath.Glob(filepath.Join(root, "fantasy-history", "*"))
	for _, s := range snaps {
		dirs["history-"+filepath.Base(s)+"/"] = filepath.Join(s, "providertests", "testdata", suite)
	}
	for prefix, dir := range dirs {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return nil
			}
			rel, _ := filepath.Rel(dir, path)
			out[prefix+strings.TrimSuffix(rel, ".yaml")] = path
			return nil
		})
	}
	return out
}

func TestConformanceChat(t *testing.T)      { runConformance(t, "chat", chatSuites) }
func TestConformanceResponses(t *testing.T) { runConformance(t, "responses", responsesSuites) }

func runConformance(t *testing.T, api string, suites []string) {
	root, ok := testkit.RecordedDir()
	if !ok {
		t.Skip("recorded traffic (../shared/testdata/recorded) is absent")
	}
	for _, suite := range suites {
		t.Run(suite, func(t *testing.T) {
			files := recordedFiles(t, root, suite)
			if len(files) == 0 {
				t.Skip("no recordings")
			}
			names := make([]string, 0, len(files))
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			var pass, total int
			for _, name := range names {
				rec, err := testkit.LoadRecording(files[name])
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(rec.Interactions[0].Request.URL, endpointOf(api)) {
					t.Logf("%s: not a %s exchange (%s), left out", name, api, rec.Interactions[0].Request.URL)
					continue
				}
				total++
				if t.Run(name, func(t *testing.T) { replay(t, api, rec) }) {
					pass++
				}
			}
			t.Logf("%s: %d/%d recordings pass", suite, pass, total)
		})
	}
}

func endpointOf(api string) string {
	if api == "chat" {
		return "/chat/completions"
	}
	return "/responses"
}

// recordedCall is a call as the recording client sent it back in round 2.
type recordedCall struct {
	id, name string
	args     map[string]any
}

// replay runs a recording through an adapter: round 1 from the recorded
// first request, then, when the recording has a second exchange, round 2
// with the tools' results, and checks what came back and what was sent.
func replay(t *testing.T, api string, rec *testkit.Recording) {
	srv := testkit.NewReplayer(rec)
	defer srv.Close()

	first := decodeObject(t, rec.Interactions[0].Request.Body)
	stream := first["stream"] == true
	opts := openai.Options{APIKey: "test", BaseURL: srv.URL + "/v1", NoStream: !stream}
	req := requestFrom(t, api, first, &opts)
	var model llm.Model
	if api == "chat" {
		model = openai.NewChat(opts)
	} else {
		model = openai.NewResponses(opts)
	}

	checkBody := func(req *llm.Request) {
		switch m := model.(type) {
		case *openai.Chat:
			if err := openai.CheckChatBody(m, req, stream); err != nil {
				t.Errorf("round %d: %v", req.Round, err)
			}
		case *openai.Responses:
			if err := openai.CheckResponsesBody(m, req, stream); err != nil {
				t.Errorf("round %d: %v", req.Round, err)
			}
		}
	}
	checkBody(req)
	ctx := context.Background()
	resp1, evs1 := run(t, ctx, model, req)
	checkEvents(t, resp1, evs1)
	calls := callsOf(resp1)

	if len(rec.Interactions) < 2 {
		if len(calls) != 0 {
			t.Fatalf("round 1 made %d calls, the recording has one exchange", len(calls))
		}
		if strings.TrimSpace(textOf(resp1)) == "" {
			t.Fatal("round 1 answered no text")
		}
		return
	}

	// Round 1 must have made exactly the calls the recording client sent
	// back, with the same ids and arguments.
	want := recordedCalls(t, api, decodeObject(t, rec.Interactions[1].Request.Body))
	if len(calls) != len(want) {
		t.Fatalf("round 1 calls = %d, recorded %d", len(calls), len(want))
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
	checkReasoningKept(t, api, rec, resp1)

	// Round 2: the history with the results.
	items := append([]llm.Item(nil), req.Items...)
	items = append(items, llm.Item{Role: llm.RoleAssistant, TurnID: req.TurnID, Parts: resp1.Parts})
	for _, c := range calls {
		items = append(items, llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: runTool(t, c)}))
	}
	if err := llm.CheckHistory(items); err != nil {
		t.Fatalf("round 2 history: %v", err)
	}
	req2 := *req
	req2.Items = items
	req2.Round = 2
	checkBody(&req2)
	resp2, evs2 := run(t, ctx, model, &req2)
	checkEvents(t, resp2, evs2)
	if len(callsOf(resp2)) != 0 {
		t.Errorf("round 2 made calls: %v", callsOf(resp2))
	}
	answer := textOf(resp2)
	for _, w := range wantInAnswer(calls) {
		if !strings.Contains(answer, w) {
			t.Errorf("final answer %q lacks %q", answer, w)
		}
	}

	sent := srv.Requests()
	if len(sent) != 2 {
		t.Fatalf("server received %d requests, want 2", len(sent))
	}
	for _, p := range srv.Paths() {
		if p != "/v1"+endpointOf(api) {
			t.Errorf("request path %q, want /v1%s", p, endpointOf(api))
		}
	}
	compareSecondRequest(t, api, decodeObject(t, string(sent[1])), decodeObject(t, rec.Interactions[1].Request.Body), calls)
}

func run(t *testing.T, ctx context.Context, m llm.Model, req *llm.Request) (*llm.Response, []llm.Event) {
	t.Helper()
	s, err := m.Stream(ctx, req)
	if err != nil {
		t.Fatalf("round %d: %v", req.Round, err)
	}
	defer s.Close()
	var evs []llm.Event
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("round %d: %v", req.Round, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[len(evs)-1].Kind != llm.EventDone {
		t.Fatalf("round %d: stream did not end with a done event", req.Round)
	}
	return evs[len(evs)-1].Response, evs
}

// checkEvents checks that the events tell the same story as the response:
// the text events spell the text, each call is announced and completed with
// its final arguments, reasoning is streamed when kept.
func checkEvents(t *testing.T, resp *llm.Response, evs []llm.Event) {
	t.Helper()
	var text, reasoning strings.Builder
	started := map[int]string{}
	done := map[string]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case llm.EventText:
			text.WriteString(ev.Delta)
		case llm.EventReasoning:
			reasoning.WriteString(ev.Delta)
		case llm.EventCallStart:
			started[ev.Index] = ev.Call.ID
		case llm.EventCallDone:
			if started[ev.Index] != ev.Call.ID {
				t.Errorf("call done %d (%s) without its start", ev.Index, ev.Call.ID)
			}
			done[ev.Call.ID] = ev.Call.Args
		}
	}
	// The events carry the visible text: the raw text without inline
	// <think> blocks, trimmed by the DSML filter.
	if got, want := text.String(), strings.TrimSpace(think.Strip(textOf(resp), think.Options{})); strings.TrimSpace(got) != want {
		t.Errorf("text events %q, visible response text %q", got, want)
	}
	for _, c := range callsOf(resp) {
		if args, ok := done[c.ID]; !ok || args != c.Args {
			t.Errorf("call %s: done event args %q (seen %v), response %q", c.ID, args, ok, c.Args)
		}
	}
	if len(done) != len(callsOf(resp)) {
		t.Errorf("%d call done events, %d calls", len(done), len(callsOf(resp)))
	}
	for _, p := range resp.Parts {
		if p.Kind == llm.PartReasoning && p.Text != "" && reasoning.Len() == 0 {
			t.Error("reasoning kept but never streamed")
		}
		if p.Opaque != nil && p.Opaque.Provider == "" {
			t.Error("opaque payload without provider")
		}
	}
}

func textOf(r *llm.Response) string {
	it := llm.Item{Role: llm.RoleAssistant, Parts: r.Parts}
	return it.Text()
}

func callsOf(r *llm.Response) []*llm.Call {
	it := llm.Item{Role: llm.RoleAssistant, Parts: r.Parts}
	return it.Calls()
}

// runTool answers like the recording client's tools.
func runTool(t *testing.T, c *llm.Call) string {
	t.Helper()
	switch c.Name {
	case "weather":
		return "40 C"
	case "add", "multiply":
		var in struct{ A, B json.Number }
		if err := json.Unmarshal([]byte(c.Args), &in); err != nil {
			t.Fatalf("%s arguments: %v", c.Name, err)
		}
		a, _ := in.A.Int64()
		b, _ := in.B.Int64()
		if c.Name == "add" {
			return strconv.FormatInt(a+b, 10)
		}
		return strconv.FormatInt(a*b, 10)
	}
	t.Fatalf("unknown tool %q", c.Name)
	return ""
}

func wantInAnswer(calls []*llm.Call) []string {
	var w []string
	for _, c := range calls {
		switch c.Name {
		case "weather":
			w = append(w, "40")
		case "add":
			w = append(w, "5")
		case "multiply":
			w = append(w, "6")
		}
	}
	return w
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return m
}

// requestFrom rebuilds the llm request the recording client made.
func requestFrom(t *testing.T, api string, body map[string]any, opts *openai.Options) *llm.Request {
	t.Helper()
	req := &llm.Request{TurnID: "turn-1", Round: 1}
	req.Model, _ = body["model"].(string)
	var msgs []any
	if api == "chat" {
		msgs, _ = body["messages"].([]any)
	} else {
		msgs, _ = body["input"].([]any)
		req.System, _ = body["instructions"].(string)
	}
	for _, m := range msgs {
		m := m.(map[string]any)
		text := contentText(m["content"])
		switch m["role"] {
		case "system", "developer":
			req.System = text
		case "user":
			req.Items = append(req.Items, llm.Item{Role: llm.RoleUser, TurnID: req.TurnID, Parts: []llm.Part{{Kind: llm.PartText, Text: text}}})
		default:
			t.Fatalf("unexpected first-round message %v", m)
		}
	}
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		tm := tl.(map[string]any)
		if tm["type"] == "web_search" {
			req.Tools = append(req.Tools, llm.ToolSpec{Name: "web_search", Builtin: llm.BuiltinWebSearch})
			continue
		}
		if fn, ok := tm["function"].(map[string]any); ok {
			tm = fn
		}
		schema, _ := json.Marshal(tm["parameters"])
		desc, _ := tm["description"].(string)
		req.Tools = append(req.Tools, llm.ToolSpec{Name: tm["name"].(string), Description: desc, Schema: schema})
	}
	req.ParallelCalls = len(req.Tools) > 0
	for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if n, ok := body[k].(float64); ok {
			req.MaxOutputTokens = int(n)
			if k != "max_output_tokens" {
				opts.TokenParam = openai.TokenParam(k)
			}
		}
	}
	if e, ok := body["reasoning_effort"].(string); ok {
		opts.ReasoningEffort = e
	}
	if r, ok := body["reasoning"].(map[string]any); ok {
		if api == "responses" {
			opts.ReasoningEffort, _ = r["effort"].(string)
			opts.ReasoningSummary, _ = r["summary"].(string)
		} else {
			opts.Extra = map[string]any{"reasoning": r} // OpenRouter's own field
		}
	}
	return req
}

func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				s, _ := pm["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

func recordedCalls(t *testing.T, api string, body map[string]any) []recordedCall {
	t.Helper()
	var out []recordedCall
	add := func(id, name, args string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(args), &m); err != nil {
			t.Fatalf("recorded arguments %q: %v", args, err)
		}
		out = append(out, recordedCall{id: id, name: name, args: m})
	}
	if api == "chat" {
		for _, m := range body["messages"].([]any) {
			m := m.(map[string]any)
			tcs, _ := m["tool_calls"].([]any)
			for _, tc := range tcs {
				tc := tc.(map[string]any)
				fn := tc["function"].(map[string]any)
				add(tc["id"].(string), fn["name"].(string), fn["arguments"].(string))
			}
		}
		return out
	}
	for _, it := range body["input"].([]any) {
		it := it.(map[string]any)
		if it["type"] == "function_call" {
			add(it["call_id"].(string), it["name"].(string), it["arguments"].(string))
		}
	}
	return out
}

// nonEmptyReasoning finds a reasoning field with text in a chat body.
var nonEmptyReasoning = regexp.MustCompile(`"(reasoning_content|reasoning)":"[^"]|"reasoning_details":\[\{`)

// checkReasoningKept checks that reasoning the provider returned in round 1
// is kept in the parts with what is needed to send it back.
func checkReasoningKept(t *testing.T, api string, rec *testkit.Recording, resp *llm.Response) {
	t.Helper()
	body := rec.Interactions[0].Response.Body
	var want bool
	if api == "chat" {
		want = nonEmptyReasoning.MatchString(body)
	} else {
		want = strings.Contains(body, `"encrypted_content"`)
	}
	var got *llm.Part
	for i := range resp.Parts {
		if resp.Parts[i].Kind == llm.PartReasoning {
			got = &resp.Parts[i]
		}
	}
	if want && got == nil {
		t.Fatal("the provider returned reasoning; no reasoning part kept")
	}
	if got == nil {
		return
	}
	if api == "responses" && strings.Contains(body, `"encrypted_content":"`) && got.Opaque.Encrypted == "" {
		t.Error("reasoning part lost its encrypted content")
	}
}

// compareSecondRequest checks our round-2 request against the recorded one
// semantically: the same sequence of roles and item kinds, calls paired with
// results by id, the results' content, and the reasoning the provider needs
// back.
func compareSecondRequest(t *testing.T, api string, got, rec map[string]any, calls []*llm.Call) {
	t.Helper()
	if api == "chat" {
		g, r := got["messages"].([]any), rec["messages"].([]any)
		if shape(g) != shape(r) {
			t.Errorf("messages\n got %s\nrecorded %s", shape(g), shape(r))
		}
		var rAssistant, gAssistant map[string]any
		for _, m := range r {
			if m.(map[string]any)["role"] == "assistant" {
				rAssistant = m.(map[string]any)
			}
		}
		for _, m := range g {
			if m.(map[string]any)["role"] == "assistant" {
				gAssistant = m.(map[string]any)
			}
		}
		// Whatever reasoning fields the recording client sent back, the
		// provider accepted and may require: we must send them too, with
		// the same signatures and encrypted data. The texts may differ: the
		// recording client lost the first streamed fragment at times.
		for _, f := range []string{"reasoning_content", "reasoning", "reasoning_details"} {
			rv, ok := rAssistant[f]
			if !ok || rv == nil {
				continue
			}
			gv := gAssistant[f]
			if gv == nil {
				t.Errorf("assistant %s not sent back; recorded %v", f, rv)
				continue
			}
			if s, ok := rv.(string); ok && !strings.Contains(fmt.Sprint(gv), strings.TrimSpace(s)) {
				t.Errorf("assistant %s\n got %v\nrecorded %v", f, gv, rv)
			}
			for _, secret := range opaqueValues(rv) {
				if !strings.Contains(fmt.Sprint(gv), secret) {
					t.Errorf("assistant %s lacks the recorded signature or data %.40q…", f, secret)
				}
			}
		}
		return
	}
	g, r := got["input"].([]any), rec["input"].([]any)
	if shape(withoutKinds(g, "reasoning")) != shape(withoutKinds(r, "reasoning", "developer")) {
		t.Errorf("input\n got %s\nrecorded %s", shape(g), shape(r))
	}
	// Stateless requests must carry the round's reasoning back encrypted.
	if got["store"] == false {
		var n int
		for _, it := range g {
			it := it.(map[string]any)
			if it["type"] == "reasoning" {
				n++
				if _, ok := it["id"]; ok {
					t.Error("reasoning item sent with an id without storage")
				}
				if it["encrypted_content"] == nil {
					t.Error("reasoning item sent without encrypted content")
				}
			}
		}
		if inc, _ := got["include"].([]any); len(inc) > 0 && n == 0 && len(calls) > 0 && hasEncrypted(rec) {
			t.Error("encrypted reasoning was returned but not sent back")
		}
	}
}

func hasEncrypted(rec map[string]any) bool {
	_, ok := rec["include"]
	return ok
}

// shape summarizes a message or input list: role or type, call ids and
// names with decoded arguments, result ids and contents.
func shape(list []any) string {
	var b strings.Builder
	for _, x := range list {
		m := x.(map[string]any)
		role, _ := m["role"].(string)
		typ, _ := m["type"].(string)
		switch {
		case role == "system" || role == "developer":
			continue
		case role == "tool":
			fmt.Fprintf(&b, "[tool %v=%v]", m["tool_call_id"], contentText(m["content"]))
		case typ == "function_call_output":
			fmt.Fprintf(&b, "[output %v=%v]", m["call_id"], m["output"])
		case typ == "function_call":
			fmt.Fprintf(&b, "[call %v %v %v]", m["call_id"], m["name"], normalizeArgs(m["arguments"]))
		case role == "assistant":
			fmt.Fprintf(&b, "[assistant")
			if tcs, ok := m["tool_calls"].([]any); ok {
				for _, tc := range tcs {
					tc := tc.(map[string]any)
					fn := tc["function"].(map[string]any)
					fmt.Fprintf(&b, " %v %v %v", tc["id"], fn["name"], normalizeArgs(fn["arguments"]))
				}
			}
			b.WriteString("]")
		case typ != "" && typ != "message":
			fmt.Fprintf(&b, "[%s]", typ)
		default:
			fmt.Fprintf(&b, "[%s %q]", role, contentText(m["content"]))
		}
	}
	return b.String()
}

func withoutKinds(list []any, kinds ...string) []any {
	var out []any
	for _, x := range list {
		m := x.(map[string]any)
		skip := false
		for _, k := range kinds {
			if m["type"] == k || m["role"] == k {
				skip = true
			}
		}
		if !skip {
			out = append(out, x)
		}
	}
	return out
}

func normalizeArgs(a any) string {
	s, _ := a.(string)
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// opaqueValues returns the signatures and encrypted data inside reasoning
// details.
func opaqueValues(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, d := range list {
		m, _ := d.(map[string]any)
		for _, k := range []string{"signature", "data"} {
			if s, ok := m[k].(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
