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

// Turn statuses the store's queries name (record's, as stored).
const (
	// StatusQueued: a turn waiting for the thread's running turn to end.
	StatusQueued = record.StatusQueued
	// StatusRunning: a turn started and not yet ended.
	StatusRunning = record.StatusRunning
)

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
// A turn's State is left out (it holds the whole history): LoadPause reads
// it.
func (s *Store) Turns(ctx context.Context, threadID string) ([]record.Turn, error) {
	return queryTurns(ctx, s.db, threadID)
}

func queryTurns(ctx context.Context, q querier, threadID string) ([]record.Turn, error) {
	rows, err := q.QueryContext(ctx, `
SELECT t.id, t.seq, t.status, t.stop_reason, t.answer, t.error, t.usage, t.cost, t.rounds, t.settlement_rounds, t.tool_steps, t.input, t.started, t.ended,
	(SELECT p.pause FROM pauses p WHERE p.turn = t.id AND p.answered IS NULL), t.output, t.output_spec
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
		var output, spec string
		if err := rows.Scan(&t.ID, &t.Seq, &t.Status, &t.StopReason, &t.Answer, &t.Error, &usage, &t.Cost, &t.Rounds, &t.SettlementRounds, &t.ToolSteps, &input, &started, &ended, &pause, &output, &spec); err != nil {
			return nil, fmt.Errorf("store: turns: %w", err)
		}
		if t.OutputSpec, err = record.ParseOutputSpec(t.ID, spec); err != nil {
			return nil, fmt.Errorf("store: %w", err)
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
