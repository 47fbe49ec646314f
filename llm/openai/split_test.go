package openai

import (
	"bytes"
	"testing"

	"github.com/reinhq/rein/llm"
)

// splitAt returns req with its first k items moved to History, as the
// engine sends a turn on a thread it does not copy.
func splitAt(req *llm.Request, k int) *llm.Request {
	s := *req
	s.History, s.Items = req.Items[:k:k], req.Items[k:]
	return &s
}

// TestBodiesOfSplitRequestsAreTheSameBytes: a request whose first items
// come as History encodes to the same bytes as the one holding them all in
// Items, wherever the split falls (the current turn's start, found by turn
// id or by the last input, included), on both endpoints and in text tool
// mode.
func TestBodiesOfSplitRequestsAreTheSameBytes(t *testing.T) {
	tools := []llm.ToolSpec{{Name: "weather", Description: "Get <weather>"}, {Name: "add"}, {Name: "x"}}
	noTurnIDs := chatItems("s", "")
	for i := range noTurnIDs {
		noTurnIDs[i].TurnID = ""
	}
	chatReqs := []*llm.Request{
		{System: "sys", Items: chatItems("a \"q\" <b>", "t1"), TurnID: "t1", Tools: tools, ParallelCalls: true},
		{Items: noTurnIDs, Tools: tools, ToolChoice: llm.ToolChoiceNone},
		{Items: chatItems("z", "t1"), TurnID: "t9", Tools: tools[:1]},
	}
	for _, textTools := range []bool{false, true} {
		for ri, req := range chatReqs {
			joined, err := NewChat(Options{Model: "m"}).chatBody(req, true, textTools)
			if err != nil {
				t.Fatal(err)
			}
			// One adapter for all splits: its message cache serves some.
			c := NewChat(Options{Model: "m"})
			for k := 0; k <= len(req.Items); k++ {
				got, err := c.chatBody(splitAt(req, k), true, textTools)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, joined) {
					t.Fatalf("chat request %d, text tools %v, split at %d:\n%s\nwant\n%s", ri, textTools, k, got, joined)
				}
			}
		}
	}
	respReqs := []*llm.Request{
		{System: "sys", Items: responsesItems("a \"q\" <b>"), Tools: tools, ParallelCalls: true},
		{Items: responsesItems("z"), Tools: tools[:1], ToolChoice: llm.ToolChoiceRequired},
	}
	for _, opts := range []Options{{Model: "m"}, {Model: "gpt-5"}, {Model: "m", TextTools: true, Store: true}} {
		for ri, req := range respReqs {
			joined, err := NewResponses(opts).responsesBody(req, true)
			if err != nil {
				t.Fatal(err)
			}
			r := NewResponses(opts)
			for k := 0; k <= len(req.Items); k++ {
				got, err := r.responsesBody(splitAt(req, k), true)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, joined) {
					t.Fatalf("responses request %d, options %+v, split at %d:\n%s\nwant\n%s", ri, opts, k, got, joined)
				}
			}
		}
	}
}

// TestAdaptersReadHistory: both endpoints say they read Request.History,
// so the engine may hand them a thread's history without copying it.
func TestAdaptersReadHistory(t *testing.T) {
	for _, m := range []llm.Model{NewChat(Options{Model: "m"}), NewResponses(Options{Model: "m"}), llm.WithRetry(NewChat(Options{Model: "m"}), llm.RetryPolicy{Attempts: 3})} {
		if !llm.ReadsHistory(m) {
			t.Errorf("%T does not read History", m)
		}
	}
}
