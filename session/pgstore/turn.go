package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

const (
	statusQueued  = string(record.StatusQueued)
	statusRunning = string(record.StatusRunning)
	statusPaused  = string(record.StatusPaused)
)

// ErrTurnEnded is matched by the error for claiming a turn that has ended.
var ErrTurnEnded = errors.New("pgstore: the turn has ended; start a new one")

// SaveTurn implements session.Store. A running turn is claimed
// (ClaimTurn). A turn this node runs is saved only under its current
// lease (a *LeaseLostError otherwise), and its lease ends with it unless
// it stays queued; a turn another node runs is never overwritten.
func (s *Store) SaveTurn(ctx context.Context, t session.Turn) error {
	if t.ID == "" || t.ThreadID == "" {
		return errors.New("pgstore: SaveTurn: the turn needs an id and a thread id")
	}
	if !t.Status.Valid() {
		return fmt.Errorf("pgstore: turn %s has the unknown status %q; use one of record's statuses", t.ID, t.Status)
	}
	if t.Status == record.StatusRunning {
		_, err := s.ClaimTurn(ctx, t)
		return err
	}
	var pause, state any
	if t.Status == record.StatusPaused {
		if t.Pause == nil || len(t.State) == 0 {
			return fmt.Errorf("pgstore: turn %s is paused without a pause state; nothing could resume it", t.ID)
		}
		if !json.Valid(t.State) {
			return fmt.Errorf("pgstore: turn %s: its paused state is not JSON; give the JSON of its loop.State", t.ID)
		}
		p, err := json.Marshal(t.Pause)
		if err != nil {
			return fmt.Errorf("pgstore: turn %s pause: %w", t.ID, err)
		}
		pause, state = string(p), string(t.State)
	}
	usage, err := json.Marshal(t.Usage)
	if err != nil {
		return fmt.Errorf("pgstore: turn %s usage: %w", t.ID, err)
	}
	input, err := inputJSON(t)
	if err != nil {
		return err
	}
	spec, err := t.OutputSpecText()
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
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
	held := s.fence(t.ID)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockThread(ctx, tx, t.ThreadID); err != nil {
			return err
		}
		var status, node string
		var fence int64
		err := tx.QueryRow(ctx, `SELECT status, fence, node FROM turns WHERE id = $1 FOR UPDATE`, t.ID).Scan(&status, &fence, &node)
		exists := err == nil
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if held != 0 {
				return &LeaseLostError{TurnID: t.ID, Held: held}
			}
		case err != nil:
			return fmt.Errorf("pgstore: save turn %s: %w", t.ID, err)
		case held != 0 && (status != statusRunning || fence != held):
			e := &LeaseLostError{TurnID: t.ID, Held: held, Current: fence}
			if status == statusRunning {
				e.Node = node
			}
			return e
		case held == 0 && status == statusRunning:
			return &busyError{ThreadID: t.ThreadID, TurnID: t.ID, Node: node}
		}
		if !exists {
			var seq int
			if err := tx.QueryRow(ctx, `UPDATE threads SET nturns = nturns + 1, updated = $2 WHERE id = $1 RETURNING nturns`, t.ThreadID, now.UnixNano()).Scan(&seq); err != nil {
				return fmt.Errorf("pgstore: save turn %s: %w", t.ID, err)
			}
			_, err := tx.Exec(ctx, `
INSERT INTO turns (id, thread, seq, status, stop_reason, answer, error, usage, cost, rounds, settlement_rounds, tool_steps, input, started, ended, pause, state, output, output_spec)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
				t.ID, t.ThreadID, seq, string(t.Status), string(t.StopReason), t.Answer, t.Error, usage, t.Cost, t.Rounds, t.SettlementRounds, t.ToolSteps,
				input, started.UnixNano(), ended, pause, state, string(t.Output), spec)
			if err != nil {
				return fmt.Errorf("pgstore: save turn %s: %w", t.ID, err)
			}
			return nil
		}
		_, err = tx.Exec(ctx, `
UPDATE turns SET status = $2, stop_reason = $3, answer = $4, error = $5, usage = $6, cost = $7, rounds = $8, settlement_rounds = $9,
	tool_steps = $10, input = $11, ended = $12, pause = $13, state = $14, node = '', lease_until = NULL, output = $15, resume = NULL, resume_begun = false,
	output_spec = CASE WHEN $16 = '' THEN output_spec ELSE $16 END
WHERE id = $1`,
			t.ID, string(t.Status), string(t.StopReason), t.Answer, t.Error, usage, t.Cost, t.Rounds, t.SettlementRounds, t.ToolSteps,
			input, ended, pause, state, string(t.Output), spec)
		if err != nil {
			return fmt.Errorf("pgstore: save turn %s: %w", t.ID, err)
		}
		// The node that ends the thread's running or paused turn starts
		// its queued turns next (TakeTurns leaves them to it while it is
		// alive); a queued turn interrupted changes nothing of that.
		ends := t.Status.Done() && (status == statusRunning || status == statusPaused)
		if _, err := tx.Exec(ctx, `UPDATE threads SET updated = $2, queue_node = CASE WHEN $3 THEN $4 ELSE queue_node END WHERE id = $1`,
			t.ThreadID, now.UnixNano(), ends, s.node); err != nil {
			return fmt.Errorf("pgstore: save turn %s: %w", t.ID, err)
		}
		return nil
	})
	if err == nil && held != 0 {
		s.release(t.ID, held)
	}
	return err
}

// turnFields are a turn's columns as stored that a claim writes.
type turnFields struct {
	input string // inputJSON
	spec  string // record.Turn.OutputSpecText
}

// inputJSON is the stored input of a turn.
func inputJSON(t session.Turn) (string, error) {
	if len(t.Input) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(t.Input)
	if err != nil {
		return "", fmt.Errorf("pgstore: turn %s input: %w", t.ID, err)
	}
	return string(b), nil
}

// ClaimTurn implements session.Store: in one transaction, with the
// thread's row locked, a running turn of the thread whose lease expired is
// closed as cut, and t becomes the thread's running turn under a new lease
// of this node, with a fencing token no earlier lease had. While another
// live lease runs a turn of the thread it fails with an error matching
// session.ErrTurnBusy naming the node; a new or queued turn behind a paused
// one fails with session.ErrTurnPaused.
func (s *Store) ClaimTurn(ctx context.Context, t session.Turn) (session.Claim, error) {
	if t.ID == "" || t.ThreadID == "" {
		return session.Claim{}, errors.New("pgstore: ClaimTurn: the turn needs an id and a thread id")
	}
	f, started, err := claimFields(t)
	if err != nil {
		return session.Claim{}, err
	}
	var c session.Claim
	var fence int64
	held := s.fence(t.ID)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var n int64
		c, fence, n, err = s.claim(ctx, tx, t, f, started, held)
		c.Items = int(n)
		return err
	})
	if err != nil {
		return session.Claim{}, err
	}
	s.hold(t.ID, fence)
	return c, nil
}

// claimFields are the columns a claim of t writes, and when t started
// (now, for a turn that names no start): what ClaimTurn and ClaimAnswer
// both prepare before their transaction.
func claimFields(t session.Turn) (turnFields, time.Time, error) {
	input, err := inputJSON(t)
	if err != nil {
		return turnFields{}, time.Time{}, err
	}
	spec, err := t.OutputSpecText()
	if err != nil {
		return turnFields{}, time.Time{}, fmt.Errorf("pgstore: %w", err)
	}
	started := t.Started
	if started.IsZero() {
		started = time.Now()
	}
	return turnFields{input: input, spec: spec}, started, nil
}

// claim is ClaimTurn inside tx; held is the token this node holds the turn
// under already (0: none). It returns the claim, the new token and the
// thread's item count.
func (s *Store) claim(ctx context.Context, tx pgx.Tx, t session.Turn, f turnFields, started time.Time, held int64) (session.Claim, int64, int64, error) {
	if _, err := lockThread(ctx, tx, t.ThreadID); err != nil {
		return session.Claim{}, 0, 0, err
	}
	if err := s.closeExpired(ctx, tx, t.ThreadID); err != nil {
		return session.Claim{}, 0, 0, err
	}
	var other, node string
	var otherFence int64
	err := tx.QueryRow(ctx, `SELECT id, node, fence FROM turns WHERE thread = $1 AND status = 'running'`, t.ThreadID).Scan(&other, &node, &otherFence)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return session.Claim{}, 0, 0, fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
	case other != t.ID || held == 0 || otherFence != held:
		// Another turn runs, or this one under a lease not ours.
		return session.Claim{}, 0, 0, &busyError{ThreadID: t.ThreadID, TurnID: other, Node: node}
	}
	var thread, status string
	err = tx.QueryRow(ctx, `SELECT thread, status FROM turns WHERE id = $1`, t.ID).Scan(&thread, &status)
	exists := err == nil
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if err := notPaused(ctx, tx, t); err != nil {
			return session.Claim{}, 0, 0, err
		}
	case err != nil:
		return session.Claim{}, 0, 0, fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
	case thread != t.ThreadID:
		return session.Claim{}, 0, 0, fmt.Errorf("pgstore: turn %s belongs to thread %s, not %s", t.ID, thread, t.ThreadID)
	case status == statusQueued:
		if err := notPaused(ctx, tx, t); err != nil {
			return session.Claim{}, 0, 0, err
		}
	case status == statusPaused, status == statusRunning:
	default:
		return session.Claim{}, 0, 0, fmt.Errorf("thread %s: turn %s is %s: %w", t.ThreadID, t.ID, status, ErrTurnEnded)
	}
	now := time.Now().UnixNano()
	var fence, items int64
	if !exists {
		var seq int
		if err := tx.QueryRow(ctx, `UPDATE threads SET nturns = nturns + 1, updated = $2 WHERE id = $1 RETURNING nturns, nitems`, t.ThreadID, now).Scan(&seq, &items); err != nil {
			return session.Claim{}, 0, 0, fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
		}
		err := tx.QueryRow(ctx, `
INSERT INTO turns (id, thread, seq, status, input, started, node, fence, lease_until, output_spec)
VALUES ($1, $2, $3, 'running', $4, $5, $6, nextval('fences'), now() + $7 * interval '1 millisecond', $8) RETURNING fence`,
			t.ID, t.ThreadID, seq, f.input, started.UnixNano(), s.node, s.lease.Milliseconds(), f.spec).Scan(&fence)
		if err != nil {
			return session.Claim{}, 0, 0, fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
		}
		return session.Claim{}, fence, items, nil
	}
	if err := tx.QueryRow(ctx, `UPDATE threads SET updated = $2 WHERE id = $1 RETURNING nitems`, t.ThreadID, now).Scan(&items); err != nil {
		return session.Claim{}, 0, 0, fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
	}
	// A paused turn keeps its state until it ends: it is what goes back
	// if the resume never starts.
	err = tx.QueryRow(ctx, `
UPDATE turns SET status = 'running', input = $2, ended = NULL, error = '', node = $3, fence = nextval('fences'), lease_until = now() + $4 * interval '1 millisecond',
	output_spec = CASE WHEN $5 = '' THEN output_spec ELSE $5 END
WHERE id = $1 RETURNING fence`,
		t.ID, f.input, s.node, s.lease.Milliseconds(), f.spec).Scan(&fence)
	if err != nil {
		return session.Claim{}, 0, 0, fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
	}
	return session.Claim{}, fence, items, nil
}

// notPaused refuses a new or queued turn while an earlier turn of the
// thread waits for an answer.
func notPaused(ctx context.Context, tx pgx.Tx, t session.Turn) error {
	var last, status string
	err := tx.QueryRow(ctx, `SELECT id, status FROM turns WHERE thread = $1 AND id != $2 AND status != 'queued' ORDER BY seq DESC LIMIT 1`, t.ThreadID, t.ID).Scan(&last, &status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("pgstore: claim turn %s: %w", t.ID, err)
	case status == statusPaused:
		return fmt.Errorf("%w: thread %s: turn %s", session.ErrTurnPaused, t.ThreadID, last)
	}
	return nil
}
