package session

import (
	"context"
	"errors"
)

// errNoKeeper: a journal that is not a Store keeps no sub-agent threads
// (the task tool keeps them in memory then).
var errNoKeeper = errors.New("session: the run's journal keeps no threads")

// The task tool keeps a sub-agent's run as a thread of its own through the
// run's journal (agent/task's keeper: SaveThread, SaveTurn). fencedJournal
// passes those on to the store, so that a run's children are kept, and
// gives a child the owner of the thread that ran it: a named token that
// owns the parent reads its children.

// SaveThread saves a sub-agent's thread, owned by whoever owns the run's
// thread unless it names an owner.
func (j fencedJournal) SaveThread(ctx context.Context, th Thread) error {
	st, ok := j.next.(Store)
	if !ok {
		return errNoKeeper
	}
	if th.Owner == "" {
		th.Owner = j.owner
	}
	return st.SaveThread(ctx, th)
}

// SaveTurn saves a sub-agent's turn.
func (j fencedJournal) SaveTurn(ctx context.Context, t Turn) error {
	st, ok := j.next.(Store)
	if !ok {
		return errNoKeeper
	}
	return st.SaveTurn(ctx, t)
}
