package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/reinhq/rein/undo"
)

// The store keeps the undo journal (package undo): each turn's
// before-images, keyed by thread, turn and path.
var _ undo.Journal = (*Store)(nil)

// AddUndo keeps e unless its turn has an entry for the same path (or an
// exec entry) already: the first touch's before-image is the one kept.
func (s *Store) AddUndo(ctx context.Context, e undo.Entry) (bool, error) {
	var added bool
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.checkThread(ctx, tx, e.Thread); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO undo_entries (thread, turn, seq, kind, path, existed, before, mode, too_large, after)
			SELECT ?, ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ?, ?, ?, ? FROM undo_entries WHERE thread = ?
			ON CONFLICT (thread, turn, kind, path) DO NOTHING`,
			e.Thread, e.Turn, string(e.Kind), e.Path, e.Existed, e.Before, e.Mode, e.TooLarge, e.After, e.Thread)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		added = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: undo %s %s: %w", e.Turn, e.Path, err)
	}
	return added, nil
}

// SetUndoAfter notes the hash of what the turn left at path.
func (s *Store) SetUndoAfter(ctx context.Context, thread, turn, path, hash string) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE undo_entries SET after = ? WHERE thread = ? AND turn = ? AND kind = 'file' AND path = ?`, hash, thread, turn, path)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: undo %s %s: %w", turn, path, err)
	}
	return nil
}

// UndoEntries returns a turn's entries in the order they were added.
func (s *Store) UndoEntries(ctx context.Context, thread, turn string) ([]undo.Entry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT kind, path, existed, before, mode, too_large, after, undone
		FROM undo_entries WHERE thread = ? AND turn = ? ORDER BY seq`, thread, turn)
	if err != nil {
		return nil, fmt.Errorf("store: undo %s: %w", turn, err)
	}
	defer rows.Close()
	var out []undo.Entry
	for rows.Next() {
		e := undo.Entry{Thread: thread, Turn: turn}
		var kind string
		if err := rows.Scan(&kind, &e.Path, &e.Existed, &e.Before, &e.Mode, &e.TooLarge, &e.After, &e.Undone); err != nil {
			return nil, fmt.Errorf("store: undo %s: %w", turn, err)
		}
		e.Kind = undo.Kind(kind)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: undo %s: %w", turn, err)
	}
	return out, nil
}

// UndoTurns returns the thread's turns with entries not undone, latest
// first.
func (s *Store) UndoTurns(ctx context.Context, thread string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT turn FROM undo_entries WHERE thread = ? AND undone = 0
		GROUP BY turn ORDER BY max(seq) DESC`, thread)
	if err != nil {
		return nil, fmt.Errorf("store: undo of thread %s: %w", thread, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("store: undo of thread %s: %w", thread, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// MarkUndone marks a turn's entries restored and drops their
// before-images, which are not needed again.
func (s *Store) MarkUndone(ctx context.Context, thread, turn string) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE undo_entries SET undone = 1, before = NULL WHERE thread = ? AND turn = ?`, thread, turn)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: undo %s: %w", turn, err)
	}
	return nil
}

// UndoSize is the bytes of before-images the turn keeps.
func (s *Store) UndoSize(ctx context.Context, thread, turn string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(length(before)), 0) FROM undo_entries WHERE thread = ? AND turn = ?`, thread, turn).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: undo %s: %w", turn, err)
	}
	return n, nil
}
