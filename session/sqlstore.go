package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/store"
)

// SQLStore adapts rein's SQLite store (package store) to Store: threads,
// turns, items, pauses and steered input that outlive the process. Loading
// a thread normalizes it first (a turn cut by a crash ends interrupted), and
// a paused turn comes back with its state, so an answer may arrive after a
// restart.
type SQLStore struct {
	s *store.Store
}

// NewSQLStore returns the adapter of s.
func NewSQLStore(s *store.Store) *SQLStore { return &SQLStore{s: s} }

var _ Store = (*SQLStore)(nil)

// notFound makes the store's not-found errors match ErrThreadNotFound, and
// its refusals for a turn another process runs match ErrTurnBusy.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrThreadNotFound, err)
	}
	if errors.Is(err, store.ErrTurnActive) {
		return busyError{err}
	}
	return err
}

// SaveThread implements Store.
func (a *SQLStore) SaveThread(ctx context.Context, th Thread) error {
	return a.s.SaveThread(ctx, th)
}

// LoadThread implements Store.
func (a *SQLStore) LoadThread(ctx context.Context, id string) (*Snapshot, error) {
	snap, err := a.s.Load(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	out := &Snapshot{Thread: snap.Thread, Items: snap.Items, Turns: snap.Turns}
	if last := snap.Last(); last != nil && last.Status == TurnPaused {
		st, err := a.s.LoadPause(ctx, id)
		if err != nil {
			return nil, err
		}
		// Checked here, where the error can be returned; the scheduler
		// decodes it (one decode of what may be a long history).
		if !json.Valid(st) {
			return nil, fmt.Errorf("session: thread %s: the paused turn's stored state is not JSON, so nothing can resume it", id)
		}
		out.Turns[len(out.Turns)-1].State = st
	}
	var inHistory map[string]bool
	for _, t := range snap.Turns {
		// A turn running after normalization belongs to a live process,
		// which will read its own steers.
		if t.Status == TurnInProgress {
			continue
		}
		steers, err := a.s.PendingSteers(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if len(steers) > 0 && inHistory == nil {
			// A cut turn closed in the snapshot alone (the store could not
			// be written) has its steers in the history already.
			inHistory = make(map[string]bool, len(snap.Items))
			for _, it := range snap.Items {
				inHistory[it.ID] = true
			}
		}
		steers = slices.DeleteFunc(steers, func(it llm.Item) bool { return inHistory[it.ID] })
		if len(steers) > 0 {
			if out.Steers == nil {
				out.Steers = make(map[string][]llm.Item)
			}
			out.Steers[t.ID] = steers
		}
	}
	return out, nil
}

// ListThreads implements Store.
func (a *SQLStore) ListThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error) {
	return a.s.Threads(ctx, limit, cursor)
}

// ListAllThreads implements ThreadTree.
func (a *SQLStore) ListAllThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error) {
	return a.s.AllThreads(ctx, limit, cursor)
}

// ListChildren implements ThreadTree.
func (a *SQLStore) ListChildren(ctx context.Context, id string) ([]Thread, error) {
	return a.s.Children(ctx, id)
}

// Record implements Store.
func (a *SQLStore) Record(ctx context.Context, threadID string, it llm.Item) error {
	return notFound(a.s.Record(ctx, threadID, it))
}

// SaveTurn implements Store.
func (a *SQLStore) SaveTurn(ctx context.Context, t Turn) error {
	if t.Status == TurnInProgress {
		_, err := a.ClaimTurn(ctx, t)
		return err
	}
	return notFound(a.s.SaveTurn(ctx, t))
}

// ClaimTurn implements Store with store.ClaimTurn: the turn becomes
// running, owned by this process, unless a live process runs a turn of
// the thread.
func (a *SQLStore) ClaimTurn(ctx context.Context, t Turn) (Claim, error) {
	c, err := a.s.ClaimTurn(ctx, Turn{ID: t.ID, ThreadID: t.ThreadID, Status: TurnInProgress, Input: t.Input, Started: t.Started})
	if errors.Is(err, store.ErrPaused) {
		return Claim{}, fmt.Errorf("%w: %w", ErrTurnPaused, err)
	}
	if err != nil {
		return Claim{}, notFound(err)
	}
	return Claim{Items: c.Items}, nil
}

// AddSteer implements Store.
func (a *SQLStore) AddSteer(ctx context.Context, _, turnID string, it llm.Item) error {
	_, err := a.s.AddSteer(ctx, turnID, it)
	return err
}
