package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// textRound is a round as a model without native tool use writes it: prose,
// then two calls in DSML.
const textRound = "Checking both.\n" +
	"<|DSML|tool_calls>\n" +
	"<|DSML|invoke name=\"weather\">\n" +
	"<|DSML|parameter name=\"location\" string=\"true\">Florence</|DSML|parameter>\n" +
	"</|DSML|invoke>\n" +
	"<|DSML|invoke name=\"add\">\n" +
	"<|DSML|parameter name=\"a\" string=\"false\">2</|DSML|parameter>\n" +
	"<|DSML|parameter name=\"b\" string=\"false\">3</|DSML|parameter>\n" +
	"</|DSML|invoke>\n" +
	"</|DSML|tool_calls>"

// TestTextToolModeRunsCallsWrittenAsText drives a two-round turn through the
// engine in text tool mode: no tool definitions are sent, the calls are
// parsed from the text with fresh ids and run, and the second request
// carries them back as DSML text and their results as user text.
func TestTextToolModeRunsCallsWrittenAsText(t *testing.T) {
	const answer = "Florence has 40 C, and 2 + 3 = 5."
	type weatherIn struct {
		Location string `json:"location"`
	}
	tools := tool.NewSet(
		tool.New("weather", "Get weather information for a location", func(_ context.Context, in weatherIn) (tool.Output, error) {
			return tool.Text("40 C"), nil
		}, tool.WithAccess(tool.ReadOnly)),
		tool.New("add", "Add two numbers", func(_ context.Context, in struct {
			A int64 `json:"a"`
			B int64 `json:"b"`
		}) (tool.Output, error) {
			return tool.Textf("%d", in.A+in.B), nil
		}, tool.WithAccess(tool.ReadOnly)),
	)
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m, srv := newMock(t, mode.noSSE, Options{TextTools: true},
				testkit.AnthropicRound{Round: testkit.Round{Text: textRound}},
				testkit.AnthropicRound{Round: testkit.Round{Text: answer}},
			)
			e, err := loop.New(loop.Options{Model: m, System: "You are terse.", Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Run(context.Background(), loop.Turn{Input: []llm.Item{llm.UserText("Weather in Florence, and 2+3?")}})
			if err != nil || out.Status != loop.StatusCompleted || out.Rounds != 2 || out.Answer != answer {
				t.Fatalf("turn: %v, %s/%s, %d rounds, answer %q", err, out.Status, out.StopReason, out.Rounds, out.Answer)
			}
			var calls []*llm.Call
			results := map[string]string{}
			for i := range out.Items {
				calls = append(calls, out.Items[i].Calls()...)
				if r := out.Items[i].Result(); r != nil {
					results[r.CallID] = r.Content
				}
			}
			if len(calls) != 2 || calls[0].Name != "weather" || calls[1].Name != "add" || calls[0].ID == calls[1].ID || calls[0].Format != llm.CallText {
				t.Fatalf("calls %+v: want weather and add, written as text, with distinct ids", calls)
			}
			if results[calls[0].ID] != "40 C" || results[calls[1].ID] != "5" {
				t.Errorf("results %v", results)
			}

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				var body struct {
					Tools    json.RawMessage `json:"tools"`
					System   []struct{ Text string }
					Messages []struct {
						Role    string
						Content []struct{ Type, Text string }
					}
				}
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatal(err)
				}
				if body.Tools != nil {
					t.Errorf("request %d sends tool definitions in text mode", i)
				}
				if len(body.System) != 1 || !strings.HasPrefix(body.System[0].Text, "You are terse.\n\n# Tools") || !strings.Contains(body.System[0].Text, "### add") {
					t.Errorf("request %d system %+v: want the prompt, then the tools", i, body.System)
				}
				for _, msg := range body.Messages {
					for _, c := range msg.Content {
						if c.Type != "text" {
							t.Errorf("request %d has a %s block in text mode", i, c.Type)
						}
					}
				}
				if i == 1 {
					if n := len(body.Messages); n != 3 {
						t.Fatalf("second request has %d messages, want user, assistant, user", n)
					}
					asst, user := body.Messages[1], body.Messages[2]
					if last := asst.Content[len(asst.Content)-1].Text; !strings.Contains(last, `invoke name="weather"`) || !strings.Contains(last, `invoke name="add"`) {
						t.Errorf("the assistant message does not end with the calls in DSML: %q", last)
					}
					if got := user.Content[0].Text; !strings.Contains(got, "<tool_result name=\"weather\">\n40 C\n</tool_result>") || !strings.Contains(got, "<tool_result name=\"add\">\n5\n</tool_result>") {
						t.Errorf("the results went back as %q", got)
					}
				}
			}
		})
	}
}
