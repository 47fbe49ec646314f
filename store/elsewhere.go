package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ThreadsElsewhere says the threads whose tools' data this file keeps
// (scheduled jobs, undo entries) are held by another store: a rein serve
// whose threads are in PostgreSQL. Their thread ids are then not checked
// against this file's threads; otherwise a job or an undo entry for a
// thread the file does not hold is refused with ErrNotFound.
func (s *Store) ThreadsElsewhere() { s.elsewhere.Store(true) }

// checkThread refuses, with an error wrapping ErrNotFound, a thread this
// file does not hold, unless the threads are elsewhere.
func (s *Store) checkThread(ctx context.Context, tx *sql.Tx, id string) error {
	if s.elsewhere.Load() {
		return nil
	}
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: thread %s: %w", id, err)
	}
	return nil
}
