package session

import "context"

// The task tool keeps a sub-agent's run as a thread of its own through the
// run's journal (agent/task's keeper: SaveThread, SaveTurn). fencedJournal
// passes those on to the store, fenced like the run's items, and gives a
// child the owner of the thread that ran it: a named token that owns the
// parent reads its children.

// SaveThread saves a sub-agent's thread, owned by whoever owns the run's
// thread unless it names an owner.
func (j fencedJournal) SaveThread(ctx context.Context, th Thread) error {
	if th.Owner == "" {
		th.Owner = j.owner
	}
	return j.fenced(j.next.SaveThread(ctx, th))
}

// SaveTurn saves a sub-agent's turn.
func (j fencedJournal) SaveTurn(ctx context.Context, t Turn) error {
	return j.fenced(j.next.SaveTurn(ctx, t))
}
