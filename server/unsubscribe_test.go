package server_test

import (
	"testing"
	"time"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

// A connection that unsubscribes from a thread gets none of its later
// notifications, and the scheduler may then forget the idle thread (a
// watched thread is never forgotten).
func TestAnUnsubscribedThreadIsNoLongerWatchedOrHeld(t *testing.T) {
	b := newBackend(t)
	b.script("u", scripted.Script{Rounds: []scripted.Round{{Text: "hello"}}})
	s := b.server(t, server.Config{})
	a, other := stdioClient(t, s), stdioClient(t, s)
	a.initialize()
	other.initialize()
	var th protocol.ThreadResult
	a.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, &th)
	id := th.Thread.ID

	if n := b.sched.EvictIdle(time.Nanosecond, 0); n != 0 {
		t.Fatalf("a watched thread was forgotten (%d)", n)
	}
	a.call(protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{ThreadID: id}, nil)
	// Idempotent, and says nothing of threads that do not exist.
	a.call(protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{ThreadID: id}, nil)
	a.call(protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{ThreadID: "no-such-thread"}, nil)
	if e := a.callErr(protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{}); e.Code != protocol.CodeInvalidParams {
		t.Fatalf("unsubscribe without threadId: %+v", e)
	}
	if n := b.sched.EvictIdle(time.Nanosecond, 0); n != 1 {
		t.Fatalf("the unwatched idle thread was not forgotten: %d forgotten, want 1", n)
	}

	// Another connection runs a turn on it: the first hears nothing.
	other.call(protocol.MethodThreadResume, protocol.ThreadResumeParams{ThreadID: id}, nil)
	other.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: id, Input: text("hi")}, nil)
	other.until(protocol.NotifyTurnCompleted, nil, nil)
	a.call(protocol.MethodThreadList, protocol.ThreadListParams{}, nil)
	for _, m := range a.seen {
		t.Errorf("after unsubscribing, the connection got %s %s", m.Method, m.Params)
	}
}

// A connection watches at most MaxWatched threads; past it, thread/start
// is refused before any thread is made, and unsubscribing makes room.
func TestAConnectionWatchesABoundedNumberOfThreads(t *testing.T) {
	b := newBackend(t)
	b.script("u", scripted.Script{})
	c := stdioClient(t, b.server(t, server.Config{MaxWatched: 2}))
	c.initialize()
	var first protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, &first)
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, nil)
	e := c.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"})
	if e.Data == nil || e.Data.Kind != "tooManyWatched" {
		t.Fatalf("a third watched thread: %+v, want kind tooManyWatched", e)
	}
	var list protocol.ThreadListResult
	c.call(protocol.MethodThreadList, protocol.ThreadListParams{}, &list)
	if len(list.Threads) != 2 {
		t.Fatalf("%d threads stored, want 2: the refused thread/start made one", len(list.Threads))
	}
	// A thread already watched takes no more room.
	c.call(protocol.MethodThreadResume, protocol.ThreadResumeParams{ThreadID: list.Threads[0].ID}, nil)
	c.call(protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{ThreadID: first.Thread.ID}, nil)
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, nil)
}
