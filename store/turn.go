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

// Turn statuses the store's queries name (record's, as stored).
const (
	// StatusQueued: a turn waiting for the thread's running turn to end.
	StatusQueued = record.StatusQueued
	// StatusRunning: a turn started and not yet ended.
	StatusRunning = record.StatusRunning
)

// StartTurn records a new running turn of the thread, owned by this
// process; turnID "" gets a fresh id. It is ClaimTurn of a new turn: a cut
// turn of the thread is normalized first; it fails with a *TurnActiveError
// (ErrTurnActive) while a live process runs another turn of the thread,
// and with ErrPaused while the latest one waits for an answer.
func (s *Store) StartTurn(ctx context.Context, threadID, turnID string) (record.Turn, error) {
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

// FinishTurn records how a turn ended: status, stop reason, answer, error,
// usage and counters of t (loop.Outcome.Record makes it); when approved is
// not nil it becomes the thread's approved tools. A paused turn keeps its
// Pause and State for ResumeTurn (as SavePause does).
func (s *Store) FinishTurn(ctx context.Context, t record.Turn, approved []string) error {
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
UPDATE turns SET status = ?, stop_reason = ?, answer = ?, error = ?, usage = ?, cost = ?, rounds = ?, settlement_rounds = ?, tool_steps = ?, ended = ?, state = NULL, output = ?
WHERE id = ?`,
			string(t.Status), string(t.StopReason), t.Answer, t.Error, string(usage), t.Cost, t.Rounds, t.SettlementRounds, t.ToolSteps, now.UnixNano(), string(t.Output), t.ID); err != nil {
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

// settled notes, once a turn of this process was to be recorded as ended or
// paused, that this process no longer runs it; when the write failed, why,
// so that the turn is later closed saying its end was not recorded.
func settled(turnID string, err error) {
	if err == nil {
		liveDel(turnID)
		forgetUnrecorded(turnID)
		return
	}
	if isLive(turnID) {
		lost(turnID, err)
	}
}

// touch marks the thread updated, for lists ordered by activity.
func touch(ctx context.Context, tx *sql.Tx, threadID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE threads SET updated = ? WHERE id = ?`, now.UnixNano(), threadID); err != nil {
		return fmt.Errorf("store: thread %s: %w", threadID, err)
	}
	return nil
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

// turnThread returns the thread of a turn, or ErrNotFound.
func turnThread(ctx context.Context, tx *sql.Tx, turnID string) (string, error) {
	var threadID string
	err := tx.QueryRowContext(ctx, `SELECT thread FROM turns WHERE id = ?`, turnID).Scan(&threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("turn %s: %w", turnID, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: turn %s: %w", turnID, err)
	}
	return threadID, nil
}

// Turns returns the thread's turns in order.
//
// A turn's State is left out (it holds the whole history): LoadPause and
// ResumeTurn read it.
func (s *Store) Turns(ctx context.Context, threadID string) ([]record.Turn, error) {
	return queryTurns(ctx, s.db, threadID)
}

func queryTurns(ctx context.Context, q querier, threadID string) ([]record.Turn, error) {
	rows, err := q.QueryContext(ctx, `
SELECT t.id, t.seq, t.status, t.stop_reason, t.answer, t.error, t.usage, t.cost, t.rounds, t.settlement_rounds, t.tool_steps, t.input, t.started, t.ended,
	(SELECT p.pause FROM pauses p WHERE p.turn = t.id AND p.answered IS NULL), t.output
FROM turns t WHERE t.thread = ? ORDER BY t.seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: turns: %w", err)
	}
	defer rows.Close()
	var turns []record.Turn
	for rows.Next() {
		t := record.Turn{ThreadID: threadID}
		var usage, input string
		var started int64
		var ended sql.NullInt64
		var pause sql.NullString
		var output string
		if err := rows.Scan(&t.ID, &t.Seq, &t.Status, &t.StopReason, &t.Answer, &t.Error, &usage, &t.Cost, &t.Rounds, &t.SettlementRounds, &t.ToolSteps, &input, &started, &ended, &pause, &output); err != nil {
			return nil, fmt.Errorf("store: turns: %w", err)
		}
		if output != "" {
			t.Output = json.RawMessage(output)
		}
		t.Started = time.Unix(0, started)
		if ended.Valid {
			t.Ended = time.Unix(0, ended.Int64)
		}
		if err := json.Unmarshal([]byte(usage), &t.Usage); err != nil {
			return nil, fmt.Errorf("store: turn %s usage: %w", t.ID, err)
		}
		if input != "[]" {
			if err := json.Unmarshal([]byte(input), &t.Input); err != nil {
				return nil, fmt.Errorf("store: turn %s input: %w", t.ID, err)
			}
		}
		if pause.Valid && t.Status == record.StatusPaused {
			t.Pause = new(record.Pause)
			if err := json.Unmarshal([]byte(pause.String), t.Pause); err != nil {
				return nil, fmt.Errorf("store: turn %s pause: %w", t.ID, err)
			}
		}
		turns = append(turns, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: turns: %w", err)
	}
	return turns, nil
}
