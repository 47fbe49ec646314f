package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/undo"
)

// fakeUndo refuses over a changed file unless forced, and records what it
// was asked.
type fakeUndo struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeUndo) Undo(_ context.Context, thread, turn string, force bool) (*undo.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %s %v", thread, turn, force))
	switch {
	case turn == "turn_none":
		return nil, fmt.Errorf("thread %s: %w", thread, undo.ErrNothing)
	case !force:
		return nil, &undo.ConflictError{Turn: "turn_1", Conflicts: []undo.Conflict{{Path: "a.txt", Why: "changed since"}}}
	}
	return &undo.Result{Turn: "turn_1", Restored: []string{"a.txt"}, Overwritten: []string{"a.txt"}}, nil
}

func TestTurnUndoRefusesOverChangedFilesUnlessForced(t *testing.T) {
	b := newBackend(t)
	b.script("u", scripted.Script{})
	u := &fakeUndo{}
	c := stdioClient(t, b.server(t, server.Config{Undo: u}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, &th)
	id := th.Thread.ID

	e := c.callErr(protocol.MethodTurnUndo, protocol.TurnUndoParams{ThreadID: id})
	if e.Code != protocol.CodeUndoConflict || e.Data == nil || e.Data.Kind != "undoConflict" ||
		!slices.Equal(e.Data.Conflicts, []protocol.UndoConflict{{Path: "a.txt", Why: "changed since"}}) {
		t.Errorf("turn/undo over a changed file: %+v, want undoConflict naming a.txt", e)
	}
	var res protocol.TurnUndoResult
	c.call(protocol.MethodTurnUndo, protocol.TurnUndoParams{ThreadID: id, TurnID: "turn_1", Force: true}, &res)
	if res.TurnID != "turn_1" || !slices.Equal(res.Restored, []string{"a.txt"}) || res.Removed == nil || res.Summary == "" {
		t.Errorf("forced turn/undo: %+v", res)
	}
	if e := c.callErr(protocol.MethodTurnUndo, protocol.TurnUndoParams{ThreadID: id, TurnID: "turn_none"}); e.Code != protocol.CodeNothingToUndo {
		t.Errorf("turn/undo with nothing to undo: %+v", e)
	}
	if want := []string{id + "  false", id + " turn_1 true", id + " turn_none false"}; !slices.Equal(u.calls, want) {
		t.Errorf("undo calls %q, want %q", u.calls, want)
	}

	// Without an Undoer the method says so.
	c2 := stdioClient(t, b.server(t, server.Config{}))
	c2.initialize()
	if e := c2.callErr(protocol.MethodTurnUndo, protocol.TurnUndoParams{ThreadID: id}); e.Code != protocol.CodeInvalidParams {
		t.Errorf("turn/undo on a server without undo: %+v", e)
	}
}

func TestANamedTokenCannotUndoAnothersTurn(t *testing.T) {
	b := newBackend(t)
	b.script("u", scripted.Script{})
	u := &fakeUndo{}
	s := b.server(t, server.Config{Undo: u, NamedTokens: []server.NamedToken{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}})
	_, dial := namedServerOf(t, s)
	alice, bob := dial(t, bearer(aliceToken)), dial(t, bearer(bobToken))
	var th protocol.ThreadResult
	alice.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:u"}, &th)
	if e := bob.callErr(protocol.MethodTurnUndo, protocol.TurnUndoParams{ThreadID: th.Thread.ID, Force: true}); e.Code != protocol.CodeThreadNotFound {
		t.Errorf("bob's turn/undo of alice's thread: %+v, want threadNotFound", e)
	}
	if len(u.calls) != 0 {
		t.Errorf("bob's turn/undo reached the undo: %q", u.calls)
	}
}
