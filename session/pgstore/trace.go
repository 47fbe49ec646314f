package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AppendTrace implements session.TraceStore: the events of a turn join the
// thread's trace in order.
func (s *Store) AppendTrace(ctx context.Context, threadID, turnID string, events []json.RawMessage) error {
	if len(events) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM trace_events WHERE thread = $1`, threadID).Scan(&last); err != nil {
			return fmt.Errorf("pgstore: trace of %s: %w", threadID, err)
		}
		rows := make([][]any, len(events))
		for i, e := range events {
			rows[i] = []any{threadID, last + int64(i) + 1, turnID, string(e)}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"trace_events"}, []string{"thread", "seq", "turn", "data"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("pgstore: trace of %s: %w", threadID, err)
		}
		return nil
	})
}

// Trace returns the thread's trace events in order.
func (s *Store) Trace(ctx context.Context, threadID string) ([]json.RawMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT data FROM trace_events WHERE thread = $1 ORDER BY seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: trace of %s: %w", threadID, err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: trace of %s: %w", threadID, err)
	}
	out := make([]json.RawMessage, len(raw))
	for i, r := range raw {
		out[i] = json.RawMessage(r)
	}
	return out, nil
}
