package server_test

import (
	"encoding/json"
	"github.com/reinhq/rein/protocol"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/server"
)

func TestThreadCompactRunsACompactionTurn(t *testing.T) {
	b := newBackend(t)
	b.script("compact", scripted.Script{Rounds: []scripted.Round{
		{Text: "the port is 8420"},
		// The compaction's summary call.
		{Text: "Goal: find the port. Progress: found 8420. Remaining: nothing."},
		// The next turn starts from the summary.
		{Text: "still 8420", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "and now?"}}}},
	}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:compact"}, &th)
	var started protocol.TurnStartResult
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("which port?")}, &started)
	var done protocol.TurnNotification
	c.until(protocol.NotifyTurnCompleted, &done, nil)

	var compact protocol.TurnStartResult
	c.call(protocol.MethodThreadCompact, protocol.ThreadCompactParams{ThreadID: th.Thread.ID}, &compact)
	if compact.Turn.ID == "" || compact.Turn.ID == started.Turn.ID {
		t.Fatalf("thread/compact turn %+v", compact.Turn)
	}
	c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.ID == compact.Turn.ID })
	if done.Turn.Status != "completed" || done.Turn.StopReason != "compacted" {
		t.Fatalf("the compaction turn ended %s/%s (%s)", done.Turn.Status, done.Turn.StopReason, done.Turn.Error)
	}
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("and now?")}, &started)
	c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.ID == started.Turn.ID })
	if done.Turn.Answer != "still 8420" {
		t.Errorf("after the compaction: %+v", done.Turn)
	}
	var read protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &read)
	found := false
	for _, it := range read.Items {
		if b, _ := json.Marshal(it); strings.Contains(string(b), "Goal: find the port") {
			found = true
		}
	}
	if !found {
		t.Error("the summary is not an item of the thread")
	}
}

func TestThreadCompactNeedsAThread(t *testing.T) {
	b := newBackend(t)
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	if e := c.callErr(protocol.MethodThreadCompact, protocol.ThreadCompactParams{}); e.Code != protocol.CodeInvalidParams {
		t.Errorf("thread/compact without a thread: %+v", e)
	}
}
