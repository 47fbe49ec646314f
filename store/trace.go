package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// AppendTrace keeps events of a turn of thread for its trace (rein trace
// THREAD), in order after those kept before. Events are JSON, as the
// event stream's --json form writes them.
func (s *Store) AppendTrace(ctx context.Context, thread, turn string, events []json.RawMessage) error {
	if len(events) == 0 {
		return nil
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var next int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM trace_events WHERE thread = ?`, thread).Scan(&next); err != nil {
			return fmt.Errorf("store: trace of %s: %w", thread, err)
		}
		for _, e := range events {
			next++
			if _, err := tx.ExecContext(ctx, `INSERT INTO trace_events (thread, seq, turn, data) VALUES (?, ?, ?, ?)`, thread, next, turn, string(e)); err != nil {
				if isForeignKey(err) {
					return fmt.Errorf("thread %s: %w", thread, ErrNotFound)
				}
				return fmt.Errorf("store: trace of %s: %w", thread, err)
			}
		}
		return nil
	})
}

// Trace returns the events kept for thread's turns, oldest first.
func (s *Store) Trace(ctx context.Context, thread string) ([]json.RawMessage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT data FROM trace_events WHERE thread = ? ORDER BY seq`, thread)
	if err != nil {
		return nil, fmt.Errorf("store: trace of %s: %w", thread, err)
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("store: trace of %s: %w", thread, err)
		}
		out = append(out, json.RawMessage(d))
	}
	return out, rows.Err()
}
