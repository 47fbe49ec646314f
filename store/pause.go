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

// checkPaused refuses, before anything is written, a paused turn that
// nothing could resume: without a pause or a state, or with a state that is
// not JSON.
func checkPaused(turnID string, p *record.Pause, state []byte) error {
	if p == nil || len(state) == 0 {
		return fmt.Errorf("store: turn %s is paused without a pause state; nothing could resume it", turnID)
	}
	if !json.Valid(state) {
		return fmt.Errorf("store: turn %s: its paused state is not JSON; give the JSON of its loop.State", turnID)
	}
	return nil
}

// putPause marks the turn paused with its state and records what it waits
// for, keyed by (turn, call).
func putPause(ctx context.Context, tx *sql.Tx, turnID string, pause *record.Pause, state []byte, now time.Time) error {
	p, err := json.Marshal(pause)
	if err != nil {
		return fmt.Errorf("store: turn %s pause: %w", turnID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = ?, stop_reason = ?, state = ?, ended = ? WHERE id = ?`,
		string(record.StatusPaused), string(record.StopAwaitingUser), string(state), now.UnixNano(), turnID); err != nil {
		return fmt.Errorf("store: pause turn %s: %w", turnID, err)
	}
	if _, err := tx.ExecContext(ctx, `
INSERT INTO pauses (turn, call_id, pause, created) VALUES (?, ?, ?, ?)
ON CONFLICT (turn, call_id) DO UPDATE SET pause = excluded.pause, answered = NULL`,
		turnID, pause.CallID, string(p), now.UnixNano()); err != nil {
		return fmt.Errorf("store: pause turn %s: %w", turnID, err)
	}
	return nil
}

// LoadPause returns the state of the thread's latest turn when it is
// paused, the JSON of its loop.State; record.ErrNotPaused (wrapped) when it
// is not. The state names the turn and the call an answer must be keyed
// by.
func (s *Store) LoadPause(ctx context.Context, threadID string) (json.RawMessage, error) {
	var turnID, status string
	var state sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT id, status, state FROM turns WHERE thread = ? ORDER BY seq DESC LIMIT 1`, threadID).Scan(&turnID, &status, &state)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Thread(ctx, threadID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("thread %s has no turns: %w", threadID, record.ErrNotPaused)
	}
	if err != nil {
		return nil, fmt.Errorf("store: pause of thread %s: %w", threadID, err)
	}
	if record.Status(status) != record.StatusPaused || !state.Valid {
		return nil, fmt.Errorf("thread %s: turn %s is %s: %w", threadID, turnID, status, record.ErrNotPaused)
	}
	return json.RawMessage(state.String), nil
}

// Abandon closes a paused turn unanswered, as when the user moves on
// without answering: its placeholder results say so, a marker tells the
// model, and the turn ends interrupted. History stays valid.
func (s *Store) Abandon(ctx context.Context, turnID string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		threadID, err := turnThread(ctx, tx, turnID)
		if err != nil {
			return err
		}
		var status string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM turns WHERE id = ?`, turnID).Scan(&status); err != nil {
			return fmt.Errorf("store: abandon turn %s: %w", turnID, err)
		}
		if record.Status(status) != record.StatusPaused {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, record.ErrNotPaused)
		}
		return closeTurn(ctx, tx, threadID, turnID, abandoned)
	})
}
