package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/tool"
)

// TestTwoSubagentsPausingInOneRoundAreEachAnsweredThroughTheServer: two
// task calls of one round whose children both ask the user reach the
// client as two pauses, one after the other; each answer resumes its own
// child, and the parent goes on only when both have answered.
func TestTwoSubagentsPausingInOneRoundAreEachAnsweredThroughTheServer(t *testing.T) {
	ask := &fakeTool{spec: tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		var in struct {
			Q string `json:"q"`
		}
		_ = json.Unmarshal(c.Args, &in)
		return tool.Output{Text: "[awaiting user reply]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: in.Q}}}}, nil
	}}
	b := newBackend(t, ask, task.New(task.Options{}))
	// Without a bound tool set the task calls run one after the other, so
	// one script serves the parent and both children in a known order.
	b.script("two", scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{
			{ID: "t1", Name: task.Name, Args: map[string]any{"description": "colour", "prompt": "Ask the colour."}},
			{ID: "t2", Name: task.Name, Args: map[string]any{"description": "size", "prompt": "Ask the size."}},
		}},
		{Calls: []scripted.Call{{ID: "q1", Name: "ask_user", Args: map[string]any{"q": "Colour?"}}}},
		{Calls: []scripted.Call{{ID: "q2", Name: "ask_user", Args: map[string]any{"q": "Size?"}}}},
		{Text: "The colour is blue.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "q1", Contains: "blue"}}}},
		{Text: "The size is large.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "q2", Contains: "large"}}}},
		{Text: "A large blue one.", Expect: []scripted.Expect{
			{Result: &scripted.ResultExpect{Call: "t1", Contains: "The colour is blue."}},
			{Result: &scripted.ResultExpect{Call: "t2", Contains: "The size is large."}},
		}},
	}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:two"}, &th)
	var started protocol.TurnStartResult
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("describe it")}, &started)

	answers := map[string]string{"t1": "blue", "t2": "large"}
	prompts := map[string]string{"t1": "Colour?", "t2": "Size?"}
	for _, call := range []string{"t1", "t2"} {
		var pause protocol.PauseRequested
		for m := c.read(); m.Method != protocol.NotifyPauseRequested; m = c.read() {
			var ended protocol.TurnNotification
			if m.Method == protocol.NotifyTurnCompleted && json.Unmarshal(m.Params, &ended) == nil && ended.Turn.Status != "paused" {
				t.Fatalf("the turn ended before %s was asked: %s", call, m.Params)
			}
		}
		decode(t, c.seen[len(c.seen)-1], &pause)
		if pause.TurnID != started.Turn.ID || pause.CallID != call || len(pause.Questions) != 1 || pause.Questions[0].Prompt != prompts[call] {
			t.Fatalf("pause/requested %+v, want %s asking %q", pause, call, prompts[call])
		}
		c.call(protocol.MethodPauseAnswer, protocol.PauseAnswerParams{ThreadID: th.Thread.ID, TurnID: started.Turn.ID, CallID: call,
			Answers: []protocol.QuestionAnswer{{QuestionID: "q1", Text: answers[call]}}}, nil)
	}
	var done protocol.TurnNotification
	c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.Status != "paused" })
	if done.Turn.ID != started.Turn.ID || done.Turn.Status != "completed" || done.Turn.Answer != "A large blue one." {
		t.Errorf("turn/completed %+v", done.Turn)
	}
	checkNotifications(t, c.seen)
}
