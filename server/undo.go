package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/undo"
)

// Undoer puts back the files a turn of a thread wrote (agent.Undo in rein
// serve). It refuses while a turn of the thread runs, and returns an
// *undo.ConflictError naming the files changed after the turn, restoring
// nothing, unless force; undo.ErrNothing when there is nothing to undo.
type Undoer interface {
	Undo(ctx context.Context, thread, turn string, force bool) (*undo.Result, error)
}

// UndoFunc is an Undoer of a function.
type UndoFunc func(ctx context.Context, thread, turn string, force bool) (*undo.Result, error)

// Undo implements Undoer.
func (f UndoFunc) Undo(ctx context.Context, thread, turn string, force bool) (*undo.Result, error) {
	return f(ctx, thread, turn, force)
}

// turnUndo answers turn/undo.
func (c *conn) turnUndo(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.TurnUndoParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	u := c.s.c.Undo
	if u == nil {
		return nil, invalidParams("this server does not undo turns")
	}
	r, err := u.Undo(ctx, p.ThreadID, p.TurnID, p.Force)
	if ce, ok := errors.AsType[*undo.ConflictError](err); ok {
		d := &protocol.ErrorData{Kind: "undoConflict"}
		for _, x := range ce.Conflicts {
			d.Conflicts = append(d.Conflicts, protocol.UndoConflict{Path: x.Path, Why: x.Why})
		}
		return nil, &protocol.Error{Code: protocol.CodeUndoConflict, Message: ce.Error(), Data: d}
	}
	if errors.Is(err, undo.ErrNothing) {
		return nil, &protocol.Error{Code: protocol.CodeNothingToUndo, Message: err.Error(), Data: &protocol.ErrorData{Kind: "nothingToUndo"}}
	}
	if err != nil {
		return nil, err
	}
	return protocol.TurnUndoResult{
		TurnID: r.Turn, Restored: nonNil(r.Restored), Removed: nonNil(r.Removed), Overwritten: r.Overwritten,
		Skipped: r.Skipped, Untracked: r.Untracked, Summary: r.Summary(),
	}, nil
}

// nonNil is s, or an empty slice for nil (a JSON array, never null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
