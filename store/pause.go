package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/loop"
)

// SavePause records a turn as paused with the state to resume it from (a
// turn handed out by ResumeTurn whose resume did not start goes back this
// way). FinishTurn does the same for a paused outcome.
func (s *Store) SavePause(ctx context.Context, st *loop.State) error {
	if st == nil || st.Pause == nil {
		return loop.ErrNotPaused
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("store: turn %s state: %w", st.TurnID, err)
	}
	now := time.Now()
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		threadID, err := turnThread(ctx, tx, st.TurnID)
		if err != nil {
			return err
		}
		if err := putPause(ctx, tx, st, b, now); err != nil {
			return err
		}
		return touch(ctx, tx, threadID, now)
	})
	settled(st.TurnID, err)
	return err
}

// putPause marks the turn paused with its state and records what it waits
// for, keyed by (turn, call).
func putPause(ctx context.Context, tx *sql.Tx, st *loop.State, state []byte, now time.Time) error {
	p, err := json.Marshal(st.Pause)
	if err != nil {
		return fmt.Errorf("store: turn %s pause: %w", st.TurnID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = ?, stop_reason = ?, state = ?, ended = ? WHERE id = ?`,
		string(loop.StatusPaused), string(loop.StopAwaitingUser), string(state), now.UnixNano(), st.TurnID); err != nil {
		return fmt.Errorf("store: pause turn %s: %w", st.TurnID, err)
	}
	if _, err := tx.ExecContext(ctx, `
INSERT INTO pauses (turn, call_id, pause, created) VALUES (?, ?, ?, ?)
ON CONFLICT (turn, call_id) DO UPDATE SET pause = excluded.pause, answered = NULL`,
		st.TurnID, st.Pause.CallID, string(p), now.UnixNano()); err != nil {
		return fmt.Errorf("store: pause turn %s: %w", st.TurnID, err)
	}
	return nil
}

// LoadPause returns the state of the thread's latest turn when it is
// paused; loop.ErrNotPaused (wrapped) when it is not. The state names the
// turn and the call an answer must be keyed by.
func (s *Store) LoadPause(ctx context.Context, threadID string) (*loop.State, error) {
	var turnID, status string
	var state sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT id, status, state FROM turns WHERE thread = ? ORDER BY seq DESC LIMIT 1`, threadID).Scan(&turnID, &status, &state)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Thread(ctx, threadID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("thread %s has no turns: %w", threadID, loop.ErrNotPaused)
	}
	if err != nil {
		return nil, fmt.Errorf("store: pause of thread %s: %w", threadID, err)
	}
	if loop.Status(status) != loop.StatusPaused || !state.Valid {
		return nil, fmt.Errorf("thread %s: turn %s is %s: %w", threadID, turnID, status, loop.ErrNotPaused)
	}
	return decodeState(turnID, state.String)
}

func decodeState(turnID, s string) (*loop.State, error) {
	st := new(loop.State)
	if err := json.Unmarshal([]byte(s), st); err != nil {
		return nil, fmt.Errorf("store: turn %s state: %w", turnID, err)
	}
	return st, nil
}

// ResumeTurn hands a paused turn to this process to continue: when the
// turn waits on callID it becomes running (owned by this process) and its
// state is returned for loop.Engine.Resume; then FinishTurn records how it
// ended. Exactly one caller wins: the others get loop.ErrNotPaused. An
// answer for another call gets a *loop.PauseMismatchError and changes
// nothing.
func (s *Store) ResumeTurn(ctx context.Context, turnID, callID string) (*loop.State, error) {
	var st *loop.State
	var closed []string
	liveAdd(turnID)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var status string
		var state sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT status, state FROM turns WHERE id = ?`, turnID).Scan(&status, &state)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("turn %s: %w", turnID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: resume turn %s: %w", turnID, err)
		}
		if loop.Status(status) != loop.StatusPaused || !state.Valid {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, loop.ErrNotPaused)
		}
		if st, err = decodeState(turnID, state.String); err != nil {
			return err
		}
		if st.Pause == nil {
			return fmt.Errorf("turn %s: %w", turnID, loop.ErrNotPaused)
		}
		if st.Pause.CallID != callID {
			return &loop.PauseMismatchError{WantTurn: turnID, WantCall: st.Pause.CallID, GotTurn: turnID, GotCall: callID}
		}
		// Claimed as every running turn is. The state stays until the turn
		// finishes or pauses again: it is what SavePause puts back if the
		// resume never starts.
		threadID, err := turnThread(ctx, tx, turnID)
		if err != nil {
			return err
		}
		_, closed, err = claim(ctx, tx, Turn{ID: turnID, ThreadID: threadID}, []byte("[]"), time.Now(), time.Now())
		return err
	})
	if err != nil {
		liveDel(turnID)
		return nil, err
	}
	forgetUnrecorded(closed...)
	return st, nil
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
		if loop.Status(status) != loop.StatusPaused {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, loop.ErrNotPaused)
		}
		return closeTurn(ctx, tx, threadID, turnID, abandoned)
	})
}
