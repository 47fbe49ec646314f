package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/tool"
)

// TestASubagentsPausedTurnIsControlledOnlyThroughItsParent attacks a
// paused child as a client would: its turn is its parent's task call's, so
// turn/interrupt and turn/steer on the child's own thread are refused and
// leave it paused; the parent's answer then finishes both.
func TestASubagentsPausedTurnIsControlledOnlyThroughItsParent(t *testing.T) {
	ask := &fakeTool{spec: tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{Text: "[awaiting user reply]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: "Colour?"}}}}, nil
	}}
	b := newBackend(t, ask, task.New(task.Options{}))
	b.script("one", scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "t1", Name: task.Name, Args: map[string]any{"description": "colour", "prompt": "Ask the colour."}}}},
		{Calls: []scripted.Call{{ID: "q1", Name: "ask_user", Args: map[string]any{}}}},
		{Text: "The colour is blue."},
		{Text: "Blue."},
	}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:one"}, &th)
	var started protocol.TurnStartResult
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("colour?")}, &started)
	for m := c.read(); m.Method != protocol.NotifyPauseRequested; m = c.read() {
	}
	var parent protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &parent)
	if len(parent.Children) != 1 {
		t.Fatalf("children %+v", parent.Children)
	}
	kid := parent.Children[0].ID
	var child protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: kid}, &child)
	if len(child.Turns) != 1 || child.Turns[0].Status != "paused" {
		t.Fatalf("child turns %+v, want one paused", child.Turns)
	}
	kt := child.Turns[0].ID
	if e := c.callErr(protocol.MethodTurnSteer, protocol.TurnSteerParams{ThreadID: kid, ExpectedTurnID: kt, Input: text("red")}); e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "sub-agent") {
		t.Errorf("turn/steer on the child's turn: %+v, want invalid params naming the sub-agent", e)
	}
	if e := c.callErr(protocol.MethodTurnInterrupt, protocol.TurnInterruptParams{ThreadID: kid, TurnID: kt}); e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "sub-agent") {
		t.Errorf("turn/interrupt on the child's turn: %+v, want invalid params naming the sub-agent", e)
	}
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: kid}, &child)
	if child.Turns[0].Status != "paused" {
		t.Errorf("after the client's attempts the child's turn is %s, want still paused", child.Turns[0].Status)
	}
	c.call(protocol.MethodPauseAnswer, protocol.PauseAnswerParams{ThreadID: th.Thread.ID, TurnID: started.Turn.ID, CallID: "t1",
		Answers: []protocol.QuestionAnswer{{QuestionID: "q1", Text: "blue"}}}, nil)
	var done protocol.TurnNotification
	c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.Status != "paused" })
	if done.Turn.Status != "completed" {
		raw, _ := json.Marshal(done.Turn)
		t.Errorf("parent turn %s", raw)
	}
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: kid}, &child)
	if len(child.Turns) != 1 || child.Turns[0].Status != "completed" {
		t.Errorf("child turns %+v, want its one turn completed", child.Turns)
	}
}
