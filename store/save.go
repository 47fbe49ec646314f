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

// This file holds the upserts a scheduler that keeps its own state needs:
// it decides which turn runs, the store only records it (package session's
// SQLStore, which every door goes through).

// SaveThread creates the thread or updates its title, workspace, model and
// settings. Created and the Parent link are kept from the first save;
// Updated becomes now.
func (s *Store) SaveThread(ctx context.Context, t record.Thread) error {
	if t.ID == "" {
		return errors.New("store: SaveThread: the thread has no id")
	}
	settings, err := settingsJSON(t.Settings)
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	created := now
	if !t.Created.IsZero() {
		created = t.Created.UnixNano()
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO threads (id, created, updated, title, workspace, model, settings, parent_thread, parent_turn, parent_call, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET updated = excluded.updated, workspace = excluded.workspace, model = excluded.model,
	settings = excluded.settings, title = CASE WHEN excluded.title = '' THEN threads.title ELSE excluded.title END`,
			t.ID, created, now, shortTitle(t.Title), t.Settings.Workspace, t.Settings.Model, settings, t.Parent.ThreadID, t.Parent.TurnID, t.Parent.CallID, t.Owner)
		if err != nil {
			return fmt.Errorf("store: save thread %s: %w", t.ID, err)
		}
		return nil
	})
}

// SaveTurn creates or updates a turn record as given. A running turn is
// claimed (ClaimTurn: owned by this process, refused while another live
// process runs a turn of the thread); a paused one needs its State; a turn
// that ended drops any state it had. A turn running in another live
// process is never overwritten: that is refused with a *TurnActiveError.
func (s *Store) SaveTurn(ctx context.Context, t record.Turn) error {
	if t.ID == "" || t.ThreadID == "" {
		return errors.New("store: SaveTurn: the turn needs an id and a thread id")
	}
	if !t.Status.Valid() {
		return fmt.Errorf("store: turn %s has the unknown status %q; use one of record's statuses", t.ID, t.Status)
	}
	if t.Status == StatusRunning {
		_, err := s.ClaimTurn(ctx, t)
		return err
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
	input := []byte("[]")
	if len(t.Input) > 0 {
		if input, err = json.Marshal(t.Input); err != nil {
			return fmt.Errorf("store: turn %s input: %w", t.ID, err)
		}
	}
	spec, err := t.OutputSpecText()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	now := time.Now()
	started := t.Started
	if started.IsZero() {
		started = now
	}
	var ended any
	if !t.Ended.IsZero() {
		ended = t.Ended.UnixNano()
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
INSERT INTO turns (id, thread, seq, status, stop_reason, answer, error, usage, cost, rounds, settlement_rounds, tool_steps, input, started, ended, owner, output, output_spec)
VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE thread = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, stop_reason = excluded.stop_reason, answer = excluded.answer, output = excluded.output,
	error = excluded.error, usage = excluded.usage, cost = excluded.cost, rounds = excluded.rounds,
	settlement_rounds = excluded.settlement_rounds, tool_steps = excluded.tool_steps, input = excluded.input,
	ended = excluded.ended, owner = excluded.owner, state = NULL,
	output_spec = CASE WHEN excluded.output_spec = '' THEN turns.output_spec ELSE excluded.output_spec END
WHERE turns.status != 'running' OR turns.owner = ?15`,
			t.ID, t.ThreadID, string(t.Status), string(t.StopReason), t.Answer, t.Error, string(usage), t.Cost,
			t.Rounds, t.SettlementRounds, t.ToolSteps, string(input), started.UnixNano(), ended, owner, string(t.Output), spec)
		if err != nil {
			if isForeignKey(err) {
				return fmt.Errorf("thread %s: %w", t.ThreadID, ErrNotFound)
			}
			return fmt.Errorf("store: save turn %s: %w", t.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("store: save turn %s: %w", t.ID, err)
		} else if n == 0 {
			return runningElsewhere(ctx, tx, t.ThreadID, t.ID)
		}
		if t.Status != StatusQueued {
			if _, err := tx.ExecContext(ctx, `UPDATE pauses SET answered = ? WHERE turn = ? AND answered IS NULL`, now.UnixNano(), t.ID); err != nil {
				return fmt.Errorf("store: save turn %s: %w", t.ID, err)
			}
		}
		if paused {
			if err := putPause(ctx, tx, t.ID, t.Pause, t.State, now); err != nil {
				return err
			}
		}
		return touch(ctx, tx, t.ThreadID, now)
	})
	if t.Status != StatusQueued {
		settled(t.ID, err)
	}
	return err
}

// runningElsewhere is the error for a turn another process runs.
func runningElsewhere(ctx context.Context, tx *sql.Tx, threadID, turnID string) error {
	var who string
	if err := tx.QueryRowContext(ctx, `SELECT owner FROM turns WHERE id = ?`, turnID).Scan(&who); err != nil {
		return fmt.Errorf("store: save turn %s: %w", turnID, err)
	}
	o, _ := parseOwner(who)
	return &TurnActiveError{ThreadID: threadID, TurnID: turnID, Owner: o}
}
