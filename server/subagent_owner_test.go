package server_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/tool"
)

// TestASubagentsThreadBelongsToItsParentsOwner: the thread a task call
// makes is owned by the named token that owns the parent, so that token
// reads it (thread/read, thread/list with children) and another named
// token does not. Before, a child had no owner and its parent's owner got
// threadNotFound.
func TestASubagentsThreadBelongsToItsParentsOwner(t *testing.T) {
	lookup := &fakeTool{spec: tool.Spec{Name: "lookup", Access: tool.ReadOnly}}
	lookup.run = func(context.Context, tool.Call) (tool.Output, error) { return tool.Output{Text: "Oslo"}, nil }
	b := newBackend(t, lookup, task.New(task.Options{}))
	b.script("alice", scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "t1", Name: task.Name, Args: map[string]any{"description": "find the capital", "prompt": "Find the capital of Norway."}}}},
		{Text: "It is Oslo."},
		{Text: "Oslo."},
	}})
	_, dial := namedServer(t, b)
	alice, bob := dial(t, bearer(aliceToken)), dial(t, bearer(bobToken))

	var th protocol.ThreadResult
	alice.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:alice"}, &th)
	alice.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("capital of Norway?")}, nil)
	var done protocol.TurnNotification
	alice.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.ThreadID == th.Thread.ID })

	var parent protocol.ThreadReadResult
	alice.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &parent)
	if len(parent.Children) != 1 {
		t.Fatalf("the parent names %d children, want 1", len(parent.Children))
	}
	kid := parent.Children[0].ID
	var child protocol.ThreadReadResult
	alice.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: kid}, &child)
	if child.Thread.Owner != "alice" || len(child.Turns) != 1 {
		t.Errorf("alice reads her child thread as owner %q with %d turns, want alice's with 1", child.Thread.Owner, len(child.Turns))
	}
	var list protocol.ThreadListResult
	alice.call(protocol.MethodThreadList, protocol.ThreadListParams{IncludeChildren: true}, &list)
	if len(list.Threads) != 2 {
		t.Errorf("alice lists %d threads with children, want her thread and its child", len(list.Threads))
	}
	if e := bob.callErr(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: kid}); e.Data == nil || e.Data.Kind != "threadNotFound" {
		t.Errorf("bob reads alice's child: %+v, want threadNotFound", e)
	}
}
