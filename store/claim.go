package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/record"
)

// Claim is what claiming a turn found.
type Claim struct {
	// Seq is the turn's position in its thread (1, 2, …).
	Seq int
	// Items is how many items the thread's history holds once the turn is
	// claimed, a cut turn's closing included. A caller that keeps the
	// history in memory compares it with its own count: a difference means
	// another process wrote to the thread, and the history must be read
	// again before the turn runs on it.
	Items int
}

// ClaimTurn makes t the running turn of its thread, owned by this process,
// in one write: the only way a turn becomes running (SaveTurn of a running
// turn uses it), so one turn runs per thread whatever process,
// command or server runs it. t is a new turn, a queued one, or a paused
// one being resumed (its state is kept until the turn ends); its Status is
// not read, the turn becomes running. Before claiming, a running turn of
// the thread whose owner is gone is closed as cut (Normalize).
//
// It fails with a *TurnActiveError (matching ErrTurnActive) naming the
// running turn and its process while a live process runs another turn of
// the thread, or this one; with ErrPaused when a new or queued turn would
// pass a turn waiting for an answer; with ErrTurnEnded for a turn that has
// ended; with ErrNotFound for a missing thread.
func (s *Store) ClaimTurn(ctx context.Context, t record.Turn) (Claim, error) {
	if t.ID == "" || t.ThreadID == "" {
		return Claim{}, errors.New("store: ClaimTurn: the turn needs an id and a thread id")
	}
	input := []byte("[]")
	if len(t.Input) > 0 {
		var err error
		if input, err = json.Marshal(t.Input); err != nil {
			return Claim{}, fmt.Errorf("store: turn %s input: %w", t.ID, err)
		}
	}
	spec, err := t.OutputSpecText()
	if err != nil {
		return Claim{}, fmt.Errorf("store: %w", err)
	}
	now := time.Now()
	started := t.Started
	if started.IsZero() {
		started = now
	}
	var c Claim
	var closed []string
	// Marked live before the commit: a Normalize racing with it in this
	// process must not take the new turn for cut.
	wasLive := isLive(t.ID)
	liveAdd(t.ID)
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		c, closed, err = claim(ctx, tx, t, input, spec, started, now)
		return err
	})
	if err != nil {
		if !wasLive {
			liveDel(t.ID)
		}
		return Claim{}, err
	}
	forgetUnrecorded(closed...)
	return c, nil
}

// isLive reports whether this process runs the turn.
func isLive(turnID string) bool {
	live.Lock()
	defer live.Unlock()
	return live.turns[turnID]
}

// claim is ClaimTurn inside tx.
func claim(ctx context.Context, tx *sql.Tx, t record.Turn, input []byte, spec string, started, now time.Time) (c Claim, closed []string, err error) {
	if closed, err = normalize(ctx, tx, t.ThreadID); err != nil {
		return Claim{}, nil, err
	}
	var other, who string
	err = tx.QueryRowContext(ctx, `SELECT id, owner FROM turns WHERE thread = ? AND status = 'running' AND id != ? LIMIT 1`, t.ThreadID, t.ID).Scan(&other, &who)
	switch {
	case err == nil:
		o, _ := parseOwner(who)
		return Claim{}, nil, &TurnActiveError{ThreadID: t.ThreadID, TurnID: other, Owner: o}
	case !errors.Is(err, sql.ErrNoRows):
		return Claim{}, nil, fmt.Errorf("store: claim turn %s: %w", t.ID, err)
	}
	var thread, status string
	err = tx.QueryRowContext(ctx, `SELECT thread, seq, status, owner FROM turns WHERE id = ?`, t.ID).Scan(&thread, &c.Seq, &status, &who)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := notPaused(ctx, tx, t); err != nil {
			return Claim{}, nil, err
		}
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE thread = ?`, t.ThreadID).Scan(&c.Seq); err != nil {
			return Claim{}, nil, fmt.Errorf("store: claim turn %s: %w", t.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (id, thread, seq, status, input, started, owner, output_spec) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.ThreadID, c.Seq, string(StatusRunning), string(input), started.UnixNano(), owner, spec); err != nil {
			if isForeignKey(err) {
				return Claim{}, nil, fmt.Errorf("thread %s: %w", t.ThreadID, ErrNotFound)
			}
			return Claim{}, nil, fmt.Errorf("store: claim turn %s: %w", t.ID, err)
		}
	case err != nil:
		return Claim{}, nil, fmt.Errorf("store: claim turn %s: %w", t.ID, err)
	case thread != t.ThreadID:
		return Claim{}, nil, fmt.Errorf("store: turn %s belongs to thread %s, not %s", t.ID, thread, t.ThreadID)
	default:
		switch record.Status(status) {
		case StatusQueued:
			if err := notPaused(ctx, tx, t); err != nil {
				return Claim{}, nil, err
			}
		case record.StatusPaused:
		case StatusRunning:
			// Live (normalize closed it otherwise): ours is claimed again,
			// another process's is refused.
			if who != owner {
				o, _ := parseOwner(who)
				return Claim{}, nil, &TurnActiveError{ThreadID: t.ThreadID, TurnID: t.ID, Owner: o}
			}
		default:
			return Claim{}, nil, fmt.Errorf("thread %s: turn %s is %s: %w", t.ThreadID, t.ID, status, ErrTurnEnded)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = ?, owner = ?, input = ?, ended = NULL, error = '',
	output_spec = CASE WHEN ? = '' THEN output_spec ELSE ? END WHERE id = ?`,
			string(StatusRunning), owner, string(input), spec, spec, t.ID); err != nil {
			return Claim{}, nil, fmt.Errorf("store: claim turn %s: %w", t.ID, err)
		}
	}
	if err := touch(ctx, tx, t.ThreadID, now); err != nil {
		return Claim{}, nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM items WHERE thread = ?`, t.ThreadID).Scan(&c.Items); err != nil {
		return Claim{}, nil, fmt.Errorf("store: claim turn %s: %w", t.ID, err)
	}
	return c, closed, nil
}

// notPaused refuses a new or queued turn while an earlier turn of the
// thread waits for an answer.
func notPaused(ctx context.Context, tx *sql.Tx, t record.Turn) error {
	var last, status string
	err := tx.QueryRowContext(ctx, `SELECT id, status FROM turns WHERE thread = ? AND id != ? AND status != 'queued' ORDER BY seq DESC LIMIT 1`, t.ThreadID, t.ID).Scan(&last, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("store: claim turn %s: %w", t.ID, err)
	case record.Status(status) == record.StatusPaused:
		return fmt.Errorf("thread %s: turn %s: %w", t.ThreadID, last, ErrPaused)
	}
	return nil
}
