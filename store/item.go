package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/llm"
)

// Record appends it to the thread's history and returns once it is
// committed; an item whose id was recorded before replaces that item, which
// must be a pause placeholder (ErrNotPlaceholder otherwise). It implements
// loop.Journal.
func (s *Store) Record(ctx context.Context, threadID string, it llm.Item) error {
	_, err := s.AppendItem(ctx, threadID, it)
	return err
}

// AppendItem is Record returning the item as stored: an item without an id
// gets a fresh one.
func (s *Store) AppendItem(ctx context.Context, threadID string, it llm.Item) (llm.Item, error) {
	if it.ID == "" {
		it.ID = newID("item")
	}
	enc, err := encodeItem(it)
	if err != nil {
		return llm.Item{}, err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return putItem(ctx, tx, threadID, enc)
	})
	if err != nil {
		return llm.Item{}, err
	}
	return it, nil
}

// encodedItem is an item ready for its row; encoding happens on the
// caller's goroutine, not the writer's.
type encodedItem struct {
	it      llm.Item
	parts   []byte
	pending bool
}

func encodeItem(it llm.Item) (encodedItem, error) {
	parts, err := json.Marshal(it.Parts)
	if err != nil {
		return encodedItem{}, fmt.Errorf("store: item %s: %w", it.ID, err)
	}
	res := it.Result()
	return encodedItem{it: it, parts: parts, pending: it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending}, nil
}

// putItem appends the item at the end of the thread, or replaces the pause
// placeholder with the same id in place (the answer keeps the call's one
// result where it was).
func putItem(ctx context.Context, tx *sql.Tx, threadID string, e encodedItem) error {
	it := &e.it
	now := time.Now().UnixNano()
	res, err := tx.ExecContext(ctx, `
INSERT INTO items (thread, seq, id, turn, role, origin, pending, parts, created)
VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM items WHERE thread = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (thread, id) DO UPDATE SET
	turn = excluded.turn, role = excluded.role, origin = excluded.origin,
	pending = excluded.pending, parts = excluded.parts
WHERE items.pending`,
		threadID, it.ID, it.TurnID, it.Role.String(), it.Origin.String(), e.pending, e.parts, now)
	if err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("thread %s: %w", threadID, ErrNotFound)
		}
		return fmt.Errorf("store: item %s: %w", it.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: item %s: %w", it.ID, err)
	} else if n == 0 {
		return fmt.Errorf("item %s of thread %s: %w", it.ID, threadID, ErrNotPlaceholder)
	}
	switch {
	case it.Role == llm.RoleUser && it.Origin == llm.OriginInput:
		// The first thing the user said names the thread in lists.
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET title = ? WHERE id = ? AND title = ''`, shortTitle(it.Text()), threadID); err != nil {
			return fmt.Errorf("store: thread %s title: %w", threadID, err)
		}
	case it.Origin == llm.OriginSteer:
		if _, err := tx.ExecContext(ctx, `UPDATE steers SET delivered = ? WHERE id = ? AND delivered IS NULL`, now, it.ID); err != nil {
			return fmt.Errorf("store: steer %s: %w", it.ID, err)
		}
	}
	return nil
}

func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// Items returns the thread's whole history in order: every item of every
// turn, directives included (the engine leaves earlier turns' directives
// out of the context itself).
func (s *Store) Items(ctx context.Context, threadID string) ([]llm.Item, error) {
	items, err := queryItems(ctx, s.db, `WHERE thread = ?`, threadID)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		if _, err := s.Thread(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// querier is what reads need: the database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryItems reads items in history order; where filters them.
func queryItems(ctx context.Context, q querier, where string, args ...any) ([]llm.Item, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, turn, role, origin, parts FROM items `+where+` ORDER BY seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: items: %w", err)
	}
	defer rows.Close()
	var items []llm.Item
	var role, origin string
	var parts []byte
	for rows.Next() {
		var it llm.Item
		if err := rows.Scan(&it.ID, &it.TurnID, &role, &origin, &parts); err != nil {
			return nil, fmt.Errorf("store: items: %w", err)
		}
		if it.Role, err = llm.ParseRole(role); err != nil {
			return nil, fmt.Errorf("store: item %s: %w", it.ID, err)
		}
		if it.Origin, err = llm.ParseOrigin(origin); err != nil {
			return nil, fmt.Errorf("store: item %s: %w", it.ID, err)
		}
		if err := json.Unmarshal(parts, &it.Parts); err != nil {
			return nil, fmt.Errorf("store: item %s: %w", it.ID, err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: items: %w", err)
	}
	return items, nil
}
