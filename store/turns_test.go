package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/record"
)

// The turn functions rein run and rein answer once drove the store with,
// before every door became a client of the session runtime (which claims
// and records turns with ClaimTurn and SaveTurn): kept here, unexported,
// as what the store's own tests of claims, pauses, crashes and
// normalization set their turns up with.

// startTurn records a new running turn of the thread, owned by this
// process; turnID "" gets a fresh id. It is ClaimTurn of a new turn: a cut
// turn of the thread is normalized first; it fails with a *TurnActiveError
// (ErrTurnActive) while a live process runs another turn of the thread,
// and with ErrPaused while the latest one waits for an answer.
func (s *Store) startTurn(ctx context.Context, threadID, turnID string) (record.Turn, error) {
	if turnID == "" {
		turnID = newID("turn")
	}
	t := record.Turn{ID: turnID, ThreadID: threadID, Status: StatusRunning, Started: time.Now()}
	c, err := s.ClaimTurn(ctx, t)
	if err != nil {
		return record.Turn{}, err
	}
	t.Seq = c.Seq
	return t, nil
}

// finishTurn records how a turn ended: status, stop reason, answer, error,
// usage and counters of t (loop.Outcome.Record makes it); when approved is
// not nil it becomes the thread's approved tools. A paused turn keeps its
// Pause and State for ResumeTurn (as SavePause does).
func (s *Store) finishTurn(ctx context.Context, t record.Turn, approved []string) error {
	if t.ID == "" {
		return errors.New("store: FinishTurn: the turn has no id")
	}
	if !t.Status.Valid() || t.Status == record.StatusQueued || t.Status == record.StatusRunning {
		return fmt.Errorf("store: FinishTurn: turn %s has the status %q; a turn ends completed, paused, interrupted or failed", t.ID, t.Status)
	}
	paused := t.Status == record.StatusPaused
	if paused {
		if err := checkPaused(t.ID, t.Pause, t.State); err != nil {
			return err
		}
	}
	usage, err := json.Marshal(t.Usage)
	if err != nil {
		return fmt.Errorf("store: turn %s usage: %w", t.ID, err)
	}
	now := time.Now()
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		threadID, err := turnThread(ctx, tx, t.ID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
UPDATE turns SET status = ?, stop_reason = ?, answer = ?, error = ?, usage = ?, cost = ?, rounds = ?, settlement_rounds = ?, tool_steps = ?, ended = ?, state = NULL
WHERE id = ?`,
			string(t.Status), string(t.StopReason), t.Answer, t.Error, string(usage), t.Cost, t.Rounds, t.SettlementRounds, t.ToolSteps, now.UnixNano(), t.ID); err != nil {
			return fmt.Errorf("store: finish turn %s: %w", t.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE pauses SET answered = ? WHERE turn = ? AND answered IS NULL`, now.UnixNano(), t.ID); err != nil {
			return fmt.Errorf("store: finish turn %s: %w", t.ID, err)
		}
		if paused {
			if err := putPause(ctx, tx, t.ID, t.Pause, t.State, now); err != nil {
				return err
			}
		}
		if approved != nil {
			if err := setApproved(ctx, tx, threadID, approved); err != nil {
				return err
			}
		}
		return touch(ctx, tx, threadID, now)
	})
	settled(t.ID, err)
	return err
}

// savePause records a turn as paused on p with the engine state to resume
// it from, the JSON of a loop.State (a turn handed out by ResumeTurn whose
// resume did not start goes back this way). FinishTurn does the same for a
// paused turn.
func (s *Store) savePause(ctx context.Context, turnID string, p *record.Pause, state json.RawMessage) error {
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

// resumeTurn hands a paused turn to this process to continue: when the
// turn waits on callID it becomes running (owned by this process) and its
// state (the JSON of a loop.State) is returned for loop.Engine.Resume; then
// finishTurn records how it ended. Exactly one caller wins: the others get
// record.ErrNotPaused. An answer for another call gets a
// *record.PauseMismatchError and changes nothing.
func (s *Store) resumeTurn(ctx context.Context, turnID, callID string) (json.RawMessage, error) {
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
		_, closed, err = claim(ctx, tx, record.Turn{ID: turnID, ThreadID: threadID}, []byte(input), "", time.Now(), time.Now())
		return err
	})
	if err != nil {
		liveDel(turnID)
		return nil, err
	}
	forgetUnrecorded(closed...)
	return st, nil
}

// setApproved stores the thread's approved tools, keeping its other
// settings.
func setApproved(ctx context.Context, tx *sql.Tx, threadID string, approved []string) error {
	var raw string
	if err := tx.QueryRowContext(ctx, `SELECT settings FROM threads WHERE id = ?`, threadID).Scan(&raw); err != nil {
		return fmt.Errorf("store: thread %s settings: %w", threadID, err)
	}
	var st settingsColumn
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return fmt.Errorf("store: thread %s settings: %w", threadID, err)
	}
	if slices.Equal(st.Approved, approved) {
		return nil
	}
	st.Approved = slices.Clone(approved)
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("store: thread %s settings: %w", threadID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE threads SET settings = ? WHERE id = ?`, string(b), threadID); err != nil {
		return fmt.Errorf("store: thread %s settings: %w", threadID, err)
	}
	return nil
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
