package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Memory is one entry of the user's durable memory: a preference or a fact
// the agent saved to use in later threads.
type Memory struct {
	ID string `json:"id"` // m<number>
	// Workspace is the entry's scope: the workspace's directory, or
	// UserScope ("") for an entry seen from every workspace.
	Workspace string    `json:"workspace"`
	Text      string    `json:"text"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
}

// ErrDuplicate: an edit would make a memory entry say what another already
// says. It is wrapped with the other entry's id.
var ErrDuplicate = errors.New("store: already saved")

// memoryID parses "m12" (or "12") into the row id.
func memoryID(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(id), "m"), 10, 64)
	return n, err == nil && n > 0
}

func formatMemoryID(n int64) string { return "m" + strconv.FormatInt(n, 10) }

// foldMemory is the form in which two entries are the same: case, spacing
// and closing punctuation ignored.
func foldMemory(text string) string {
	f := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	return strings.TrimRightFunc(f, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

const memoryColumns = `id, workspace, text, created, updated`

// AddMemory saves text as a new entry of scope (a workspace's directory, or
// UserScope). When an entry seen from that scope (its own or the user's)
// already says the same (ignoring case, spacing and closing punctuation)
// nothing is written, and that entry is returned with dup set.
func (s *Store) AddMemory(ctx context.Context, scope, text string) (m Memory, dup bool, err error) {
	text = strings.TrimSpace(text)
	norm := foldMemory(text)
	if norm == "" {
		return Memory{}, false, errors.New("store: memory: the text is empty")
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		old, err := memoryByNorm(ctx, tx, Visible(scope), norm)
		if err == nil {
			m, dup = old, true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: memory: %w", err)
		}
		now := time.Now()
		res, err := tx.ExecContext(ctx, `INSERT INTO memory (workspace, text, norm, created, updated) VALUES (?, ?, ?, ?, ?)`, scope, text, norm, now.UnixNano(), now.UnixNano())
		if err != nil {
			return fmt.Errorf("store: memory: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("store: memory: %w", err)
		}
		m, dup = Memory{ID: formatMemoryID(id), Workspace: scope, Text: text, Created: now, Updated: now}, false
		return nil
	})
	return m, dup, err
}

// EditMemory replaces the text of the entry id, which must be of one of
// scopes (an entry of another workspace is not found). An unknown id is an
// error wrapping ErrNotFound; text another entry seen from the entry's
// scope already says, ErrDuplicate.
func (s *Store) EditMemory(ctx context.Context, scopes []string, id, text string) (Memory, error) {
	n, ok := memoryID(id)
	if !ok {
		return Memory{}, fmt.Errorf("memory %q: %w", id, ErrNotFound)
	}
	text = strings.TrimSpace(text)
	norm := foldMemory(text)
	if norm == "" {
		return Memory{}, errors.New("store: memory: the text is empty")
	}
	var m Memory
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		cur, err := memoryByID(ctx, tx, scopes, n)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("memory %s: %w", formatMemoryID(n), ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: memory: %w", err)
		}
		old, err := memoryByNorm(ctx, tx, Visible(cur.Workspace), norm)
		if err == nil && old.ID != cur.ID {
			return fmt.Errorf("memory %s: %w as %s", cur.ID, ErrDuplicate, old.ID)
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: memory: %w", err)
		}
		now := time.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE memory SET text = ?, norm = ?, updated = ? WHERE id = ?`, text, norm, now.UnixNano(), n); err != nil {
			return fmt.Errorf("store: memory %s: %w", cur.ID, err)
		}
		m, err = memoryByID(ctx, tx, scopes, n)
		return err
	})
	return m, err
}

// DeleteMemory removes the entry id, which must be of one of scopes.
func (s *Store) DeleteMemory(ctx context.Context, scopes []string, id string) error {
	n, ok := memoryID(id)
	if !ok {
		return fmt.Errorf("memory %q: %w", id, ErrNotFound)
	}
	in, args := inScopes("workspace", scopes)
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memory WHERE id = ? AND `+in, append([]any{n}, args...)...)
		if err != nil {
			return fmt.Errorf("store: memory %s: %w", id, err)
		}
		return mustChange(res, "memory "+formatMemoryID(n))
	})
}

// Memories returns the entries of scopes (Visible(ws) for what a turn in
// ws sees), oldest first.
func (s *Store) Memories(ctx context.Context, scopes []string) ([]Memory, error) {
	in, args := inScopes("workspace", scopes)
	rows, err := s.db.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memory WHERE `+in+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: memory: %w", err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("store: memory: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: memory: %w", err)
	}
	return out, nil
}

// MemoryCount returns how many entries scopes hold.
func (s *Store) MemoryCount(ctx context.Context, scopes []string) (int, error) {
	in, args := inScopes("workspace", scopes)
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memory WHERE `+in, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: memory: %w", err)
	}
	return n, nil
}

// memoryByNorm finds the entry of scopes that says norm, its own scope's
// first.
func memoryByNorm(ctx context.Context, tx *sql.Tx, scopes []string, norm string) (Memory, error) {
	in, args := inScopes("workspace", scopes)
	return scanMemory(tx.QueryRowContext(ctx, `SELECT `+memoryColumns+` FROM memory WHERE norm = ? AND `+in+` ORDER BY workspace = '' LIMIT 1`, append([]any{norm}, args...)...))
}

func memoryByID(ctx context.Context, tx *sql.Tx, scopes []string, n int64) (Memory, error) {
	in, args := inScopes("workspace", scopes)
	return scanMemory(tx.QueryRowContext(ctx, `SELECT `+memoryColumns+` FROM memory WHERE id = ? AND `+in, append([]any{n}, args...)...))
}

func scanMemory(sc interface{ Scan(...any) error }) (Memory, error) {
	var m Memory
	var id, created, updated int64
	if err := sc.Scan(&id, &m.Workspace, &m.Text, &created, &updated); err != nil {
		return Memory{}, err
	}
	m.ID, m.Created, m.Updated = formatMemoryID(id), time.Unix(0, created), time.Unix(0, updated)
	return m, nil
}
