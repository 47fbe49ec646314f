package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
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
	c := th.Config
	return a.s.SaveThread(ctx, store.Thread{
		ID: th.ID, Created: th.CreatedAt, Workspace: c.Workspace, Model: c.Model,
		Settings: store.Settings{
			Approved: th.Approved, Approval: c.Approval, Sandbox: c.Sandbox, Instructions: c.Instructions,
			MaxRounds: c.MaxRounds, EnableTools: c.EnableTools, DisableTools: c.DisableTools,
		},
	})
}

func fromStoreThread(t store.Thread) Thread {
	s := t.Settings
	return Thread{
		ID: t.ID, CreatedAt: t.Created, UpdatedAt: t.Updated, Approved: s.Approved,
		Config: ThreadConfig{
			Workspace: t.Workspace, Model: t.Model, Instructions: s.Instructions, EnableTools: s.EnableTools,
			DisableTools: s.DisableTools, Approval: s.Approval, Sandbox: s.Sandbox, MaxRounds: s.MaxRounds,
		},
	}
}

// LoadThread implements Store.
func (a *SQLStore) LoadThread(ctx context.Context, id string) (*Snapshot, error) {
	snap, err := a.s.Load(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	out := &Snapshot{Thread: fromStoreThread(snap.Thread), Items: snap.Items, Turns: make([]Turn, 0, len(snap.Turns))}
	for _, t := range snap.Turns {
		out.Turns = append(out.Turns, fromStoreTurn(t))
	}
	if last := snap.Last(); last != nil && last.Status == loop.StatusPaused {
		st, err := a.s.LoadPause(ctx, id)
		if err != nil {
			return nil, err
		}
		out.Turns[len(out.Turns)-1].State = st
	}
	var inHistory map[string]bool
	for _, t := range snap.Turns {
		// A turn running after normalization belongs to a live process,
		// which will read its own steers.
		if t.Status == store.StatusRunning {
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
	ths, next, err := a.s.Threads(ctx, limit, cursor)
	if err != nil {
		return nil, "", err
	}
	out := make([]Thread, 0, len(ths))
	for _, t := range ths {
		out = append(out, fromStoreThread(t))
	}
	return out, next, nil
}

// Record implements Store.
func (a *SQLStore) Record(ctx context.Context, threadID string, it llm.Item) error {
	return notFound(a.s.Record(ctx, threadID, it))
}

// statuses maps the scheduler's turn statuses to the store's.
var statuses = map[TurnStatus]loop.Status{
	TurnQueued:      store.StatusQueued,
	TurnInProgress:  store.StatusRunning,
	TurnPaused:      loop.StatusPaused,
	TurnCompleted:   loop.StatusCompleted,
	TurnInterrupted: loop.StatusInterrupted,
	TurnFailed:      loop.StatusFailed,
}

func fromStoreStatus(s loop.Status) TurnStatus {
	for k, v := range statuses {
		if v == s {
			return k
		}
	}
	return TurnStatus(s)
}

// SaveTurn implements Store.
func (a *SQLStore) SaveTurn(ctx context.Context, t Turn) error {
	st, ok := statuses[t.Status]
	if !ok {
		return fmt.Errorf("session: turn %s has the unknown status %q", t.ID, t.Status)
	}
	if t.Status == TurnInProgress {
		_, err := a.ClaimTurn(ctx, t)
		return err
	}
	return notFound(a.s.SaveTurn(ctx, store.Turn{
		ID: t.ID, ThreadID: t.ThreadID, Status: st, StopReason: loop.StopReason(t.StopReason), Answer: t.Answer, Error: t.Error,
		Usage: t.Usage, Cost: t.Cost, Rounds: t.Rounds, SettlementRounds: t.SettlementRounds, ToolSteps: t.ToolSteps,
		Input: t.Input, Started: t.CreatedAt, Ended: t.CompletedAt, Pause: t.Pause, State: t.State,
	}))
}

// ClaimTurn implements Store with store.ClaimTurn: the turn becomes
// running, owned by this process, unless a live process runs a turn of
// the thread.
func (a *SQLStore) ClaimTurn(ctx context.Context, t Turn) (Claim, error) {
	c, err := a.s.ClaimTurn(ctx, store.Turn{ID: t.ID, ThreadID: t.ThreadID, Status: store.StatusRunning, Input: t.Input, Started: t.CreatedAt})
	if errors.Is(err, store.ErrPaused) {
		return Claim{}, fmt.Errorf("%w: %w", ErrTurnPaused, err)
	}
	if err != nil {
		return Claim{}, notFound(err)
	}
	return Claim{Items: c.Items}, nil
}

func fromStoreTurn(t store.Turn) Turn {
	return Turn{
		ID: t.ID, ThreadID: t.ThreadID, Status: fromStoreStatus(t.Status), Input: t.Input, StopReason: string(t.StopReason),
		Answer: t.Answer, Rounds: t.Rounds, SettlementRounds: t.SettlementRounds, ToolSteps: t.ToolSteps,
		Usage: t.Usage, Cost: t.Cost, Error: t.Error, Pause: t.Pause, CreatedAt: t.Started, CompletedAt: t.Ended,
	}
}

// AddSteer implements Store.
func (a *SQLStore) AddSteer(ctx context.Context, _, turnID string, it llm.Item) error {
	_, err := a.s.AddSteer(ctx, turnID, it)
	return err
}
