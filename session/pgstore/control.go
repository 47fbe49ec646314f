package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

var _ session.SharedStore = (*Store)(nil)

// maxPending bounds the steered input a turn holds unread: AddSteer
// refuses more, so one read of the turn's mailbox returns it all.
const maxPending = session.MaxPendingSteers

// Pending implements session.SharedStore: one read of the turn's row and
// its undelivered steers. An interrupt applies to the lease it was asked
// under (interrupt_fence), so a turn claimed again starts without it.
func (s *Store) Pending(ctx context.Context, threadID, turnID string) (session.Pending, error) {
	var p session.Pending
	var items []string
	err := s.pool.QueryRow(ctx, `
SELECT t.status = 'running' AND t.interrupt_fence = t.fence,
	COALESCE((SELECT array_agg(item ORDER BY n) FROM (
		SELECT s.item, s.n FROM steers s WHERE s.turn = t.id AND s.delivered IS NULL ORDER BY s.n LIMIT $3) q), '{}')
FROM turns t WHERE t.id = $1 AND t.thread = $2`, turnID, threadID, maxPending).Scan(&p.Interrupt, &items)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Pending{}, fmt.Errorf("pgstore: thread %s has no turn %s", threadID, turnID)
	}
	if err != nil {
		return session.Pending{}, fmt.Errorf("pgstore: pending of turn %s: %w", turnID, err)
	}
	for _, b := range items {
		var it llm.Item
		if err := json.Unmarshal([]byte(b), &it); err != nil {
			return session.Pending{}, fmt.Errorf("pgstore: steer of turn %s: %w", turnID, err)
		}
		p.Steers = append(p.Steers, it)
	}
	return p, nil
}

// RequestInterrupt implements session.SharedStore, under the thread's lock
// (so it is ordered with the turn's claim and its end): a running turn is
// marked under its current lease, a queued one ends interrupted.
func (s *Store) RequestInterrupt(ctx context.Context, threadID, turnID string) (session.TurnStatus, error) {
	var status record.Status
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		var st string
		err := tx.QueryRow(ctx, `SELECT status FROM turns WHERE id = $1 AND thread = $2 FOR UPDATE`, turnID, threadID).Scan(&st)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("pgstore: thread %s has no turn %s", threadID, turnID)
		}
		if err != nil {
			return fmt.Errorf("pgstore: interrupt turn %s: %w", turnID, err)
		}
		status = record.Status(st)
		switch st {
		case statusRunning:
			_, err = tx.Exec(ctx, `UPDATE turns SET interrupt_fence = fence WHERE id = $1`, turnID)
		case statusQueued:
			_, err = tx.Exec(ctx, `UPDATE turns SET status = $2, stop_reason = $3, ended = $4 WHERE id = $1`,
				turnID, string(record.StatusInterrupted), string(loop.StopCancelled), time.Now().UnixNano())
		}
		if err != nil {
			return fmt.Errorf("pgstore: interrupt turn %s: %w", turnID, err)
		}
		return nil
	})
	return status, err
}

// QueuedTurns implements session.SharedStore.
func (s *Store) QueuedTurns(ctx context.Context, threadID string) ([]session.Turn, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("pgstore: queued turns of %s: %w", threadID, err)
	}
	defer tx.Rollback(ctx)
	turns, _, err := queryTurnsWhere(ctx, tx, threadID, `AND status = 'queued'`)
	return turns, err
}
