package task_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// askTool pauses with one question.
func askTool() *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "ask", Access: tool.ReadOnly, Pauses: true}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		var in struct {
			Q string `json:"q"`
		}
		_ = json.Unmarshal(c.Args, &in)
		return tool.Output{Text: "(waiting)", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: in.Q}}}}, nil
	}}
}

func TestTwoChildrenPausingInOneRoundAreEachAskedAndTheParentWaitsForBoth(t *testing.T) {
	const colour, size = "Ask the colour.", "Ask the size."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{
				taskCall("t1", colour, map[string]any{"read_only": true}),
				taskCall("t2", size, map[string]any{"read_only": true}),
			}},
			{Text: "A large blue one.", Expect: []scripted.Expect{
				{Result: &scripted.ResultExpect{Call: "t1", Contains: "The colour is blue."}},
				{Result: &scripted.ResultExpect{Call: "t2", Contains: "The size is large."}},
			}},
		},
		map[string][]scripted.Round{
			colour: {
				{Calls: []scripted.Call{{ID: "q1", Name: "ask", Args: map[string]any{"q": "Colour?"}}}},
				{Text: "The colour is blue.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "q1", Contains: "blue"}}}},
			},
			size: {
				{Calls: []scripted.Call{{ID: "q1", Name: "ask", Args: map[string]any{"q": "Size?"}}}},
				{Text: "The size is large.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "q1", Contains: "large"}}}},
			},
		},
	)
	tk := task.New(task.Options{})
	tools := bound(tool.NewSet(askTool(), tk), tk)
	eng, err := loop.New(loop.Options{Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("describe it")}})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{"Colour?": "blue", "Size?": "large"}
	asked := map[string]string{}
	// Each pause is answered through JSON, as a server keeps a paused
	// turn between the question and its answer.
	for i := 0; out.Status == loop.StatusPaused; i++ {
		if i == 2 {
			t.Fatalf("paused a third time: %+v", out.Pause)
		}
		p := out.Pause
		if p.Tool != task.Name || len(p.Questions) != 1 {
			t.Fatalf("pause %d: %+v", i, p)
		}
		q := p.Questions[0].Prompt
		asked[p.CallID] = q
		blob, _ := json.Marshal(out.State)
		var st loop.State
		if err := json.Unmarshal(blob, &st); err != nil {
			t.Fatal(err)
		}
		eng2, _ := loop.New(loop.Options{Model: m, Tools: tools})
		out, err = eng2.Resume(t.Context(), &st, loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: answers[q]}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	m.verify(t)
	if asked["t1"] != "Colour?" || asked["t2"] != "Size?" {
		t.Errorf("the user was asked %v; want each child's question on its own call", asked)
	}
	if out.Status != loop.StatusCompleted || out.Answer != "A large blue one." {
		t.Fatalf("parent %s %q", out.Status, out.Answer)
	}
}
