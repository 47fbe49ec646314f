package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// Statuses of turns the engine has not ended; the others are the
// engine's (loop.StatusCompleted, …).
const (
	// StatusQueued: a turn waiting for the thread's running turn to end.
	StatusQueued loop.Status = "queued"
	// StatusRunning: a turn started and not yet ended.
	StatusRunning loop.Status = "running"
)

// Turn is one turn of a thread as stored.
type Turn struct {
	ID         string          `json:"id"`
	ThreadID   string          `json:"thread_id"`
	Seq        int             `json:"seq"`
	Status     loop.Status     `json:"status"`
	StopReason loop.StopReason `json:"stop_reason,omitempty"`
	Answer     string          `json:"answer,omitempty"`
	Error      string          `json:"error,omitempty"`
	Usage      llm.Usage       `json:"usage"`
	Cost       float64         `json:"cost,omitempty"`
	Rounds     int             `json:"rounds"`
	// SettlementRounds counts the rounds after the exploration budget.
	SettlementRounds int `json:"settlement_rounds"`
	ToolSteps        int `json:"tool_steps"`
	// Input is the input of a queued turn; once the turn runs, its input
	// is in the history.
	Input   []llm.Item `json:"input,omitempty"`
	Started time.Time  `json:"started"`
	// Ended is zero while the turn runs.
	Ended time.Time `json:"ended,omitzero"`
	// Pause is what a paused turn waits for.
	Pause *loop.Pause `json:"pause,omitempty"`
	// State is a paused turn's engine state, set for SaveTurn and by
	// ResumeTurn; Turns leaves it nil (it holds the whole history).
	State *loop.State `json:"-"`
}

// StartTurn records a new running turn of the thread, owned by this
// process; turnID "" gets a fresh id. It is ClaimTurn of a new turn: a cut
// turn of the thread is normalized first; it fails with a *TurnActiveError
// (ErrTurnActive) while a live process runs another turn of the thread,
// and with ErrPaused while the latest one waits for an answer.
func (s *Store) StartTurn(ctx context.Context, threadID, turnID string) (Turn, error) {
	if turnID == "" {
		turnID = loop.NewID("turn")
	}
	t := Turn{ID: turnID, ThreadID: threadID, Status: StatusRunning, Started: time.Now()}
	c, err := s.ClaimTurn(ctx, t)
	if err != nil {
		return Turn{}, err
	}
	t.Seq = c.Seq
	return t, nil
}

// FinishTurn records how a turn ended: status, stop reason, answer, usage
// and counters; the thread's approved tools become o.Approved. A paused
// outcome keeps its State for ResumeTurn (as SavePause does).
func (s *Store) FinishTurn(ctx context.Context, o *loop.Outcome) error {
	if o == nil {
		return errors.New("store: FinishTurn: nil outcome")
	}
	var state []byte
	if o.Status == loop.StatusPaused {
		if o.State == nil || o.State.Pause == nil {
			return fmt.Errorf("store: turn %s is paused without a pause state; nothing could resume it", o.TurnID)
		}
		var err error
		if state, err = json.Marshal(o.State); err != nil {
			return fmt.Errorf("store: turn %s state: %w", o.TurnID, err)
		}
	}
	usage, err := json.Marshal(o.Usage)
	if err != nil {
		return fmt.Errorf("store: turn %s usage: %w", o.TurnID, err)
	}
	var errText string
	if o.Err != nil {
		errText = o.Err.Error()
	}
	now := time.Now()
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		threadID, err := turnThread(ctx, tx, o.TurnID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
UPDATE turns SET status = ?, stop_reason = ?, answer = ?, error = ?, usage = ?, cost = ?, rounds = ?, settlement_rounds = ?, tool_steps = ?, ended = ?, state = NULL
WHERE id = ?`,
			string(o.Status), string(o.StopReason), o.Answer, errText, string(usage), o.Cost, o.Rounds, o.SettlementRounds, o.ToolSteps, now.UnixNano(), o.TurnID); err != nil {
			return fmt.Errorf("store: finish turn %s: %w", o.TurnID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE pauses SET answered = ? WHERE turn = ? AND answered IS NULL`, now.UnixNano(), o.TurnID); err != nil {
			return fmt.Errorf("store: finish turn %s: %w", o.TurnID, err)
		}
		if state != nil {
			if err := putPause(ctx, tx, o.State, state, now); err != nil {
				return err
			}
		}
		if o.Approved != nil {
			if err := setApproved(ctx, tx, threadID, o.Approved); err != nil {
				return err
			}
		}
		return touch(ctx, tx, threadID, now)
	})
	settled(o.TurnID, err)
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
	var st Settings
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
func (s *Store) Turns(ctx context.Context, threadID string) ([]Turn, error) {
	return queryTurns(ctx, s.db, threadID)
}

func queryTurns(ctx context.Context, q querier, threadID string) ([]Turn, error) {
	rows, err := q.QueryContext(ctx, `
SELECT t.id, t.seq, t.status, t.stop_reason, t.answer, t.error, t.usage, t.cost, t.rounds, t.settlement_rounds, t.tool_steps, t.input, t.started, t.ended,
	(SELECT p.pause FROM pauses p WHERE p.turn = t.id AND p.answered IS NULL)
FROM turns t WHERE t.thread = ? ORDER BY t.seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: turns: %w", err)
	}
	defer rows.Close()
	var turns []Turn
	for rows.Next() {
		t := Turn{ThreadID: threadID}
		var usage, input string
		var started int64
		var ended sql.NullInt64
		var pause sql.NullString
		if err := rows.Scan(&t.ID, &t.Seq, &t.Status, &t.StopReason, &t.Answer, &t.Error, &usage, &t.Cost, &t.Rounds, &t.SettlementRounds, &t.ToolSteps, &input, &started, &ended, &pause); err != nil {
			return nil, fmt.Errorf("store: turns: %w", err)
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
		if pause.Valid && t.Status == loop.StatusPaused {
			t.Pause = new(loop.Pause)
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
