package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/tool"
)

// TestASubagentIsAThreadOfItsOwnLinkedToTheParentsCall: the child a task
// call ran is kept as a thread with its items, its turn (status, tokens,
// cost) and a link to the parent's thread, turn and call; thread/list
// leaves it out unless asked, and the parent's thread/read names it.
func TestASubagentIsAThreadOfItsOwnLinkedToTheParentsCall(t *testing.T) {
	lookup := &fakeTool{spec: tool.Spec{Name: "lookup", Access: tool.ReadOnly}, run: nil}
	lookup.run = func(_ context.Context, _ tool.Call) (tool.Output, error) { return tool.Output{Text: "Oslo"}, nil }
	b := newBackend(t, lookup, task.New(task.Options{}))
	b.script("parent", scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "t1", Name: task.Name, Args: map[string]any{"description": "find the capital", "prompt": "Find the capital of Norway."}}},
			Usage: llm.Usage{InputTokens: 10, OutputTokens: 1}},
		{Calls: []scripted.Call{{ID: "c1", Name: "lookup", Args: map[string]any{}}}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "It is Oslo.", Usage: llm.Usage{InputTokens: 200, OutputTokens: 20}},
		{Text: "Oslo.", Usage: llm.Usage{InputTokens: 30, OutputTokens: 3}},
	}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:parent"}, &th)
	var started protocol.TurnStartResult
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("capital of Norway?")}, &started)
	var done protocol.TurnNotification
	c.until(protocol.NotifyTurnCompleted, &done, nil)
	if done.Turn.Status != "completed" || done.Turn.Answer != "Oslo." {
		t.Fatalf("turn/completed %+v", done.Turn)
	}

	var list protocol.ThreadListResult
	c.call(protocol.MethodThreadList, protocol.ThreadListParams{}, &list)
	if len(list.Threads) != 1 || list.Threads[0].ID != th.Thread.ID {
		t.Errorf("thread/list = %+v, want only the parent", list.Threads)
	}
	c.call(protocol.MethodThreadList, protocol.ThreadListParams{IncludeChildren: true}, &list)
	if len(list.Threads) != 2 {
		t.Errorf("thread/list with children = %+v, want the parent and the child", list.Threads)
	}

	var parent protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &parent)
	if len(parent.Children) != 1 {
		t.Fatalf("the parent's thread/read names %d children, want 1", len(parent.Children))
	}
	kid := parent.Children[0]
	want := protocol.ThreadLink{ThreadID: th.Thread.ID, TurnID: started.Turn.ID, CallID: "t1"}
	if kid.Parent == nil || *kid.Parent != want || kid.Title != "find the capital" {
		t.Errorf("child %+v link %+v, want %+v titled by the task's description", kid, kid.Parent, want)
	}

	var child protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: kid.ID}, &child)
	if len(child.Turns) != 1 {
		t.Fatalf("child turns %+v, want 1", child.Turns)
	}
	ct := child.Turns[0]
	if ct.Status != "completed" || ct.Answer != "It is Oslo." || ct.Rounds != 2 || ct.Usage.InputTokens != 300 || ct.Usage.OutputTokens != 30 {
		t.Errorf("child turn %+v, want completed with its own two rounds and tokens", ct)
	}
	var user, answer, result bool
	for _, it := range child.Items {
		user = user || (it.Type == protocol.ItemUserMessage && it.Text == "Find the capital of Norway.")
		answer = answer || (it.Type == protocol.ItemAgentMessage && it.Text == "It is Oslo.")
		result = result || (it.Result != nil && it.Result.CallID == "c1")
	}
	if !user || !answer || !result {
		t.Errorf("child items: prompt %v, lookup result %v, answer %v: %+v", user, result, answer, child.Items)
	}
	if child.Thread.Parent == nil || *child.Thread.Parent != want {
		t.Errorf("the child's own thread/read has the link %+v", child.Thread.Parent)
	}
	// The child's turn is the parent's call's: it is not started or
	// answered on its own.
	if e := c.callErr(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: kid.ID, Input: text("more")}); e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "sub-agent") {
		t.Errorf("turn/start on the child: %+v", e)
	}
	// The parent's own tokens hold the child's.
	if done.Turn.Usage.InputTokens != 340 {
		t.Errorf("parent input tokens %d, want 340", done.Turn.Usage.InputTokens)
	}
	checkNotifications(t, c.seen)
}
