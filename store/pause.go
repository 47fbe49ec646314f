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

// SavePause records a turn as paused on p with the engine state to resume
// it from, the JSON of a loop.State (a turn handed out by ResumeTurn whose
// resume did not start goes back this way). FinishTurn does the same for a
// paused turn.
func (s *Store) SavePause(ctx context.Context, turnID string, p *record.Pause, state json.RawMessage) error {
	if p == nil || len(state) == 0 {
		return fmt.Errorf("store: turn %s: %w", turnID, record.ErrNotPaused)
	}
	if err := checkPaused(turnID, p, state); err != nil {
		return err
	}
	now := time.Now()
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		threadID, err := turnThread(ctx, tx, turnID)
		if err != nil {
			return err
		}
		if err := putPause(ctx, tx, turnID, p, state, now); err != nil {
			return err
		}
		return touch(ctx, tx, threadID, now)
	})
	settled(turnID, err)
	return err
}

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

// pausedOn reads the pause a stored state waits on: the engine's state is
// the store's to keep whole, but an answer is checked against its call.
func pausedOn(turnID, state string) (*record.Pause, error) {
	var st struct {
		Pause *record.Pause `json:"pause"`
	}
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		return nil, fmt.Errorf("store: turn %s state: %w", turnID, err)
	}
	return st.Pause, nil
}

// ResumeTurn hands a paused turn to this process to continue: when the
// turn waits on callID it becomes running (owned by this process) and its
// state (the JSON of a loop.State) is returned for loop.Engine.Resume; then
// FinishTurn records how it ended. Exactly one caller wins: the others get
// record.ErrNotPaused. An answer for another call gets a
// *record.PauseMismatchError and changes nothing.
func (s *Store) ResumeTurn(ctx context.Context, turnID, callID string) (json.RawMessage, error) {
	var st json.RawMessage
	var closed []string
	liveAdd(turnID)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var status, threadID, input string
		var state sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT status, state, thread, input FROM turns WHERE id = ?`, turnID).Scan(&status, &state, &threadID, &input)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("turn %s: %w", turnID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: resume turn %s: %w", turnID, err)
		}
		if record.Status(status) != record.StatusPaused || !state.Valid {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, record.ErrNotPaused)
		}
		p, err := pausedOn(turnID, state.String)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("turn %s: %w", turnID, record.ErrNotPaused)
		}
		if p.CallID != callID {
			return &record.PauseMismatchError{WantTurn: turnID, WantCall: p.CallID, GotTurn: turnID, GotCall: callID}
		}
		st = json.RawMessage(state.String)
		// Claimed as every running turn is. The state stays until the turn
		// finishes or pauses again: it is what SavePause puts back if the
		// resume never starts. The turn's input stays what it was.
		_, closed, err = claim(ctx, tx, record.Turn{ID: turnID, ThreadID: threadID}, []byte(input), time.Now(), time.Now())
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
		if record.Status(status) != record.StatusPaused {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, record.ErrNotPaused)
		}
		return closeTurn(ctx, tx, threadID, turnID, abandoned)
	})
}
