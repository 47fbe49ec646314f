package server_test

import (
	"testing"
	"time"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

// A named token asking for another token's thread is refused without the
// thread being loaded: loading it would start the turns queued on it and
// keep it in the node's memory on behalf of a caller who may not use it.
func TestAnotherTokensThreadIsNotLoadedToRefuseIt(t *testing.T) {
	b := newBackend(t)
	b.script("u", scripted.Script{})
	s := b.server(t, server.Config{NamedTokens: []server.NamedToken{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}})
	_, dial := namedServerOf(t, s)
	bob := dial(t, bearer(bobToken))
	var th protocol.ThreadResult
	bob.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, &th)
	bob.call(protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{ThreadID: th.Thread.ID}, nil)
	if n := b.sched.EvictIdle(time.Nanosecond, 0); n != 1 || b.sched.Held() != 0 {
		t.Fatalf("bob's idle thread was not forgotten: %d forgotten, %d held", n, b.sched.Held())
	}

	alice := dial(t, bearer(aliceToken))
	for _, m := range []string{protocol.MethodThreadRead, protocol.MethodThreadResume} {
		e := alice.callErr(m, protocol.ThreadReadParams{ThreadID: th.Thread.ID})
		if e.Data == nil || e.Data.Kind != "threadNotFound" {
			t.Fatalf("alice's %s of bob's thread: %+v, want threadNotFound", m, e)
		}
		if n := b.sched.Held(); n != 0 {
			t.Fatalf("alice's refused %s loaded bob's thread (%d held)", m, n)
		}
	}
	// Bob still reads his own.
	bob.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, nil)
}
