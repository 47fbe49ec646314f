package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

var update = flag.Bool("update", false, "rewrite golden files")

// dsmlRound is a round written as a model without native tools writes it:
// prose, then two calls in DSML (ASCII bars, as some deployments print).
const dsmlRound = "Checking both.\n" +
	"<|DSML|tool_calls>\n" +
	"<|DSML|invoke name=\"weather\">\n" +
	"<|DSML|parameter name=\"location\" string=\"true\">Florence, Italy</|DSML|parameter>\n" +
	"</|DSML|invoke>\n" +
	"<|DSML|invoke name=\"add\">\n" +
	"<|DSML|parameter name=\"a\" string=\"false\">2</|DSML|parameter>\n" +
	"<|DSML|parameter name=\"b\" string=\"false\">3</|DSML|parameter>\n" +
	"</|DSML|invoke>\n" +
	"</|DSML|tool_calls>"

const textModeAnswer = "Florence has 40 C, and 2 + 3 = 5."

func textModeEngine(t *testing.T, m llm.Model) *loop.Engine {
	t.Helper()
	e, err := loop.New(loop.Options{
		Model:  m,
		System: "You are terse.",
		Tools:  tool.NewSet(recordedTool(t, "weather"), recordedTool(t, "add")),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkTextModeTurn checks a turn of two rounds in text tool mode: the
// calls parsed from text with fresh ids, run, and the answer.
func checkTextModeTurn(t *testing.T, out *loop.Outcome, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if out.Status != loop.StatusCompleted || out.Rounds != 2 || out.ToolSteps != 1 || out.Answer != textModeAnswer {
		t.Fatalf("outcome %s/%s rounds %d steps %d answer %q", out.Status, out.StopReason, out.Rounds, out.ToolSteps, out.Answer)
	}
	var calls []*llm.Call
	results := map[string]string{}
	for i := range out.Items {
		calls = append(calls, out.Items[i].Calls()...)
		if r := out.Items[i].Result(); r != nil {
			results[r.CallID] = r.Content
		}
	}
	if len(calls) != 2 || calls[0].Name != "weather" || calls[1].Name != "add" {
		t.Fatalf("calls %v, want weather and add", calls)
	}
	if calls[0].ID == calls[1].ID || !strings.HasPrefix(calls[0].ID, "call_txt_") || calls[0].Format != llm.CallText {
		t.Errorf("call ids %q %q (format %q): want fresh unique text-call ids", calls[0].ID, calls[1].ID, calls[0].Format)
	}
	if results[calls[0].ID] != "40 C" || results[calls[1].ID] != "5" {
		t.Errorf("results %v", results)
	}
}

// checkTextModeRequest checks a request sent in text tool mode: no tool
// definitions, the tools described in the system prompt, no tool-role
// messages and no native calls.
func checkTextModeRequest(t *testing.T, c testkit.Captured) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		if _, ok := body[k]; ok {
			t.Errorf("text mode request has %q", k)
		}
	}
	msgs := body["messages"].([]any)
	sys := msgs[0].(map[string]any)
	if sys["role"] != "system" || !strings.HasPrefix(contentText(sys["content"]), "You are terse.\n\n# Tools") ||
		!strings.Contains(contentText(sys["content"]), "### weather") || !strings.Contains(contentText(sys["content"]), "### add") {
		t.Errorf("system message %v: want the prompt, then the tools", sys)
	}
	for _, m := range msgs {
		m := m.(map[string]any)
		if m["role"] == "tool" || m["tool_calls"] != nil {
			t.Errorf("text mode request has a native call or result: %v", m)
		}
	}
	return body
}

func TestTextToolMode(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "json"}[stream], func(t *testing.T) {
			srv := testkit.NewChatServer(t, testkit.Round{Text: dsmlRound}, testkit.Round{Text: textModeAnswer})
			chat := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m", NoStream: !stream, TextTools: true})
			out, err := textModeEngine(t, chat).Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("Weather in Florence, and 2+3?")}})
			checkTextModeTurn(t, out, err)

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			checkTextModeRequest(t, reqs[0])
			body := checkTextModeRequest(t, reqs[1])
			// The golden file holds the second request: the calls replayed in
			// the text format and the results as one user message.
			delete(body, "stream")
			delete(body, "stream_options")
			checkGolden(t, "chat_text_mode_round2.json", body)
		})
	}
}

func TestToolsUnsupportedSwitchesToTextMode(t *testing.T) {
	srv := testkit.NewChatServer(t,
		testkit.Round{Fault: testkit.FaultToolsUnsupported},
		testkit.Round{Text: dsmlRound},
		testkit.Round{Text: textModeAnswer},
		// A second turn starts in text mode: the server is not asked again.
		testkit.Round{Text: "Still 40 C."},
	)
	chat := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m"})
	e := textModeEngine(t, chat)
	out, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("Weather in Florence, and 2+3?")}})
	checkTextModeTurn(t, out, err)
	if !chat.TextTools() {
		t.Error("the model did not stay in text tool mode")
	}
	history := append([]llm.Item{llm.UserText("Weather in Florence, and 2+3?")}, out.Items...)
	out, err = e.Run(context.Background(), loop.Turn{History: history, Input: []llm.Item{llm.UserText("And now?")}})
	if err != nil || out.Answer != "Still 40 C." {
		t.Fatalf("second turn: %v, %+v", err, out)
	}

	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	var first map[string]any
	json.Unmarshal(reqs[0].Body, &first)
	if first["tools"] == nil {
		t.Error("the first request did not offer native tools")
	}
	for _, r := range reqs[1:] {
		checkTextModeRequest(t, r)
	}
}

func TestToolsUnsupportedWithoutToolsIsReturned(t *testing.T) {
	srv := testkit.NewChatServer(t, testkit.Round{Fault: testkit.FaultToolsUnsupported})
	chat := openai.NewChat(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m"})
	_, err := chat.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
	if !errors.Is(err, llm.ToolsUnsupported) {
		t.Errorf("error %v, want tools unsupported", err)
	}
	if chat.TextTools() {
		t.Error("a request without tools switched the mode")
	}
}

// checkGolden compares v, as indented JSON, with testdata/name; -update
// rewrites the file.
func checkGolden(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs:\n got %s\nwant %s", path, buf.Bytes(), want)
	}
}

// TestResponsesTextToolMode runs the same two-round turn over the Responses
// API in text tool mode: no tool definitions, the tools in the
// instructions, the calls parsed from text and sent back as text, the
// results as user text.
func TestResponsesTextToolMode(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "json"}[stream], func(t *testing.T) {
			srv := testkit.NewResponsesServer(t, testkit.Round{Text: dsmlRound}, testkit.Round{Text: textModeAnswer})
			m := openai.NewResponses(openai.Options{APIKey: "k", BaseURL: srv.BaseURL(), Model: "m", NoStream: !stream, TextTools: true})
			out, err := textModeEngine(t, m).Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("Weather in Florence, and 2+3?")}})
			checkTextModeTurn(t, out, err)

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				var body struct {
					Tools        json.RawMessage `json:"tools"`
					ToolChoice   json.RawMessage `json:"tool_choice"`
					Instructions string          `json:"instructions"`
					Input        []map[string]any
				}
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatal(err)
				}
				if body.Tools != nil || body.ToolChoice != nil {
					t.Errorf("request %d sends tools in text mode", i)
				}
				if !strings.HasPrefix(body.Instructions, "You are terse.\n\n# Tools") || !strings.Contains(body.Instructions, "### add") {
					t.Errorf("request %d instructions %q: want the prompt, then the tools", i, body.Instructions)
				}
				for _, in := range body.Input {
					if typ, _ := in["type"].(string); typ == "function_call" || typ == "function_call_output" {
						t.Errorf("request %d has a native %s item", i, typ)
					}
				}
				if i == 1 {
					if len(body.Input) != 3 {
						t.Fatalf("second request input %v: want user, assistant, user", body.Input)
					}
					if c, _ := body.Input[1]["content"].(string); !strings.HasPrefix(c, "Checking both.") || !strings.Contains(c, `invoke name="add"`) {
						t.Errorf("assistant message %q: want the text, then the calls in DSML", c)
					}
					if c, _ := body.Input[2]["content"].(string); !strings.Contains(c, "<tool_result name=\"weather\">\n40 C\n</tool_result>") {
						t.Errorf("results went back as %q", c)
					}
				}
			}
		})
	}
}
