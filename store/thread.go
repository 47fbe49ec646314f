package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/record"
)

// settingsColumn is how the settings column of threads spells a thread's
// settings (workspace and model have columns of their own). It is the
// stored form: its spelling never changes with record.Settings.
type settingsColumn struct {
	Approved     []string `json:"approved,omitempty"`
	Approval     string   `json:"approval,omitempty"`
	Sandbox      string   `json:"sandbox,omitempty"`
	Instructions string   `json:"instructions,omitempty"`
	MaxRounds    int      `json:"max_rounds,omitempty"`
	EnableTools  []string `json:"enable_tools,omitempty"`
	DisableTools []string `json:"disable_tools,omitempty"`
	ForceTools   []string `json:"force_tools,omitempty"`
	KBs          []string `json:"kbs,omitempty"`
	// Output is the thread's output schema (record.Settings.Output).
	Output json.RawMessage `json:"output,omitempty"`
}

// settingsJSON is the settings column of st.
func settingsJSON(st record.Settings) (string, error) {
	b, err := json.Marshal(settingsColumn{
		Approved: st.Approved, Approval: st.Approval, Sandbox: st.Sandbox, Instructions: st.Instructions,
		MaxRounds: st.MaxRounds, EnableTools: st.EnableTools, DisableTools: st.DisableTools, ForceTools: st.ForceTools,
		Output: st.Output, KBs: st.KBs,
	})
	if err != nil {
		return "", fmt.Errorf("store: settings: %w", err)
	}
	return string(b), nil
}

// readSettings fills st from the settings column, keeping its workspace
// and model.
func readSettings(raw string, st *record.Settings) error {
	var c settingsColumn
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return err
	}
	st.Approved, st.Approval, st.Sandbox, st.Instructions = c.Approved, c.Approval, c.Sandbox, c.Instructions
	st.MaxRounds, st.EnableTools, st.DisableTools, st.ForceTools = c.MaxRounds, c.EnableTools, c.DisableTools, c.ForceTools
	st.Output, st.KBs = c.Output, c.KBs
	return nil
}

// titleMax bounds a title in runes: enough to recognise a thread in a list.
const titleMax = 80

// newID returns a fresh random id such as "thread_…".
func newID(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:16])
}

// CreateThread stores a new thread. An empty t.ID gets a fresh id; Created
// and Updated are set to now. It returns the thread as stored.
func (s *Store) CreateThread(ctx context.Context, t record.Thread) (record.Thread, error) {
	if t.ID == "" {
		t.ID = newID("thread")
	}
	now := time.Now()
	t.Created, t.Updated, t.Turns = now, now, 0
	t.Title = shortTitle(t.Title)
	settings, err := settingsJSON(t.Settings)
	if err != nil {
		return record.Thread{}, err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO threads (id, created, updated, title, workspace, model, settings, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, now.UnixNano(), now.UnixNano(), t.Title, t.Settings.Workspace, t.Settings.Model, settings, t.Owner)
		return err
	})
	if err != nil {
		return record.Thread{}, fmt.Errorf("store: create thread %s: %w", t.ID, err)
	}
	return t, nil
}

const threadColumns = `id, created, updated, title, workspace, model, settings, (SELECT count(*) FROM turns WHERE turns.thread = threads.id), parent_thread, parent_turn, parent_call, owner`

func scanThread(sc interface{ Scan(...any) error }) (record.Thread, error) {
	var t record.Thread
	var created, updated int64
	var settings string
	if err := sc.Scan(&t.ID, &created, &updated, &t.Title, &t.Settings.Workspace, &t.Settings.Model, &settings, &t.Turns, &t.Parent.ThreadID, &t.Parent.TurnID, &t.Parent.CallID, &t.Owner); err != nil {
		return record.Thread{}, err
	}
	t.Created, t.Updated = time.Unix(0, created), time.Unix(0, updated)
	if err := readSettings(settings, &t.Settings); err != nil {
		return record.Thread{}, fmt.Errorf("store: thread %s settings: %w", t.ID, err)
	}
	return t, nil
}

// Thread returns the thread with id, or an error wrapping ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (record.Thread, error) {
	t, err := scanThread(s.db.QueryRowContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record.Thread{}, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return record.Thread{}, fmt.Errorf("store: thread %s: %w", id, err)
	}
	return t, nil
}

// Threads lists the threads users started (not sub-agents' threads: see
// AllThreads and Children), most recently updated first, at most limit of
// them (all when limit <= 0) after cursor ("" for the first page). next is
// the cursor of the page after this one, "" when there is none.
func (s *Store) Threads(ctx context.Context, limit int, cursor string) (threads []record.Thread, next string, err error) {
	return s.FindThreads(ctx, record.ThreadQuery{Limit: limit, Cursor: cursor})
}

// AllThreads is Threads with sub-agents' threads listed too.
func (s *Store) AllThreads(ctx context.Context, limit int, cursor string) (threads []record.Thread, next string, err error) {
	return s.FindThreads(ctx, record.ThreadQuery{Limit: limit, Cursor: cursor, Children: true})
}

// Children returns the threads of the sub-agents that turns of thread id
// ran, oldest first.
func (s *Store) Children(ctx context.Context, id string) ([]record.Thread, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE parent_thread = ? ORDER BY created, id`, id)
	if err != nil {
		return nil, fmt.Errorf("store: children of %s: %w", id, err)
	}
	defer rows.Close()
	var out []record.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("store: children of %s: %w", id, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: children of %s: %w", id, err)
	}
	return out, nil
}

// FindThreads lists the threads q selects, most recently updated first: a
// page of q.Limit after q.Cursor, only q.Owner's when q.Owned, only those
// whose title contains q.Search (case-insensitive for ASCII letters, as
// SQLite's LIKE), sub-agents' threads only when q.Children. next is the cursor of the page after this one, "" when
// there is none.
func (s *Store) FindThreads(ctx context.Context, tq record.ThreadQuery) (threads []record.Thread, next string, err error) {
	if len(tq.Search) > record.MaxThreadSearch {
		return nil, "", fmt.Errorf("store: a thread search of %d bytes is too long; give at most %d", len(tq.Search), record.MaxThreadSearch)
	}
	var where []string
	args := []any{}
	if tq.Cursor != "" {
		u, id, ok := strings.Cut(tq.Cursor, "/")
		n, perr := strconv.ParseInt(u, 10, 64)
		if !ok || perr != nil {
			return nil, "", fmt.Errorf("store: bad cursor %q: pass the next cursor of the previous page", tq.Cursor)
		}
		where = append(where, `(updated, id) < (?, ?)`)
		args = append(args, n, id)
	}
	if tq.Owned {
		where = append(where, `owner = ?`)
		args = append(args, tq.Owner)
	}
	if tq.Search != "" {
		where = append(where, `title LIKE ? ESCAPE '\'`)
		args = append(args, record.LikePattern(tq.Search))
	}
	if !tq.Children {
		where = append(where, `parent_thread = ''`)
	}
	q := `SELECT ` + threadColumns + ` FROM threads`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY updated DESC, id DESC`
	limit := tq.Limit
	if limit > 0 {
		// One more than asked tells whether there is a next page.
		q += ` LIMIT ?`
		args = append(args, limit+1)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("store: threads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, "", fmt.Errorf("store: threads: %w", err)
		}
		threads = append(threads, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: threads: %w", err)
	}
	if limit > 0 && len(threads) > limit {
		threads = threads[:limit]
		last := threads[limit-1]
		next = strconv.FormatInt(last.Updated.UnixNano(), 10) + "/" + last.ID
	}
	return threads, next, nil
}

// SetSettings replaces a thread's settings.
//
// Workspace and model are the thread's own (SaveThread changes them) and
// are left as they are.
func (s *Store) SetSettings(ctx context.Context, id string, st record.Settings) error {
	b, err := settingsJSON(st)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE threads SET settings = ?, updated = ? WHERE id = ?`, b, time.Now().UnixNano(), id)
		if err != nil {
			return fmt.Errorf("store: thread %s settings: %w", id, err)
		}
		return mustChange(res, "thread "+id)
	})
}

// DeleteThread removes a thread with its turns, items, pauses and steered
// input, and the threads of the sub-agents its turns ran. It refuses with a *TurnActiveError (ErrTurnActive) while a turn
// of the thread runs in a live process.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := normalize(ctx, tx, id); err != nil {
			return err
		}
		var running, who string
		err := tx.QueryRowContext(ctx, `SELECT id, owner FROM turns WHERE thread = ? AND status = 'running'`, id).Scan(&running, &who)
		if err == nil {
			o, _ := parseOwner(who)
			return &TurnActiveError{ThreadID: id, TurnID: running, Owner: o}
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: delete thread %s: %w", id, err)
		}
		// Jobs and undo entries name their thread without a foreign key
		// (they may be of a thread kept elsewhere): deleted here.
		for _, q := range []string{`DELETE FROM jobs WHERE thread = ?`, `DELETE FROM undo_entries WHERE thread = ?`} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("store: delete thread %s: %w", id, err)
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("store: delete thread %s: %w", id, err)
		}
		if err := mustChange(res, "thread "+id); err != nil {
			return err
		}
		// The threads of the sub-agents its turns ran, and theirs, go
		// with it.
		if _, err := tx.ExecContext(ctx, `
WITH RECURSIVE tree(id) AS (
	SELECT id FROM threads WHERE parent_thread = ?
	UNION SELECT t.id FROM threads t JOIN tree ON t.parent_thread = tree.id)
DELETE FROM threads WHERE id IN (SELECT id FROM tree)`, id); err != nil {
			return fmt.Errorf("store: delete the sub-agents' threads of %s: %w", id, err)
		}
		return nil
	})
}

// mustChange turns "no row changed" into ErrNotFound for what.
func mustChange(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

// shortTitle makes a one-line title of at most titleMax runes.
func shortTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= titleMax {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:titleMax-1])) + "…"
}
