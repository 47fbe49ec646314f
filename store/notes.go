package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Notebook is a named collection of records (notes) the agent and the user
// write to.
type Notebook struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Workspace is the notebook's scope: the workspace's directory, or
	// UserScope ("") for a notebook seen from every workspace.
	Workspace string    `json:"workspace"`
	Created   time.Time `json:"created"`
	// Records counts its notes (read only).
	Records int `json:"records"`
}

// Note is one record of a notebook.
type Note struct {
	ID       string    `json:"id"` // r<number>
	Notebook string    `json:"notebook"`
	Title    string    `json:"title,omitempty"`
	Content  string    `json:"content"`
	Thread   string    `json:"thread,omitempty"` // the thread it was written from
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// noteID parses "r12" (or "12") into the row id.
func noteID(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(id), "r"), 10, 64)
	return n, err == nil && n > 0
}

func formatNoteID(n int64) string { return "r" + strconv.FormatInt(n, 10) }

// CreateNotebook creates a notebook called name (see ErrInvalidName) in
// scope (a workspace's directory, or UserScope); its id is fresh. A name
// already taken in that scope is an error; a workspace's notebook may have
// the name of one of the user's, and is the one the name finds there.
func (s *Store) CreateNotebook(ctx context.Context, scope, name string) (Notebook, error) {
	if err := checkName(name); err != nil {
		return Notebook{}, err
	}
	nb := Notebook{ID: newID("nb"), Name: name, Workspace: scope, Created: time.Now()}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO notebooks (id, workspace, name, created) VALUES (?, ?, ?, ?)`, nb.ID, nb.Workspace, nb.Name, nb.Created.UnixNano())
		if err != nil {
			return fmt.Errorf("store: notebook %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return Notebook{}, err
	}
	return nb, nil
}

const notebookColumns = `id, workspace, name, created, (SELECT count(*) FROM notes WHERE notes.notebook = notebooks.id)`

// notebookRef is the condition finding the notebook ref (an id, else a
// name) among scopes, its arguments, and the order that prefers an id,
// then a workspace's notebook over the user's of the same name.
func notebookRef(ref string, scopes []string) (where string, args []any, order string) {
	in, sargs := inScopes("workspace", scopes)
	return `(id = ? OR name = ?) AND ` + in, append([]any{ref, ref}, sargs...), ` ORDER BY id = ? DESC, workspace = '' LIMIT 1`
}

func scanNotebook(sc interface{ Scan(...any) error }) (Notebook, error) {
	var nb Notebook
	var created int64
	if err := sc.Scan(&nb.ID, &nb.Workspace, &nb.Name, &created, &nb.Records); err != nil {
		return Notebook{}, err
	}
	nb.Created = time.Unix(0, created)
	return nb, nil
}

// Notebook returns the notebook of scopes whose id or name is ref, or an
// error wrapping ErrNotFound.
func (s *Store) Notebook(ctx context.Context, scopes []string, ref string) (Notebook, error) {
	where, args, order := notebookRef(ref, scopes)
	nb, err := scanNotebook(s.db.QueryRowContext(ctx, `SELECT `+notebookColumns+` FROM notebooks WHERE `+where+order, append(args, ref)...))
	if errors.Is(err, sql.ErrNoRows) {
		return Notebook{}, fmt.Errorf("notebook %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Notebook{}, fmt.Errorf("store: notebook %s: %w", ref, err)
	}
	return nb, nil
}

// Notebooks returns the notebooks of scopes (Visible(ws) for what a turn in
// ws sees), by name.
func (s *Store) Notebooks(ctx context.Context, scopes []string) ([]Notebook, error) {
	in, args := inScopes("workspace", scopes)
	rows, err := s.db.QueryContext(ctx, `SELECT `+notebookColumns+` FROM notebooks WHERE `+in+` ORDER BY name, workspace = ''`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: notebooks: %w", err)
	}
	defer rows.Close()
	var out []Notebook
	for rows.Next() {
		nb, err := scanNotebook(rows)
		if err != nil {
			return nil, fmt.Errorf("store: notebooks: %w", err)
		}
		out = append(out, nb)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: notebooks: %w", err)
	}
	return out, nil
}

// NotebookCount returns how many notebooks scopes hold.
func (s *Store) NotebookCount(ctx context.Context, scopes []string) (int, error) {
	in, args := inScopes("workspace", scopes)
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM notebooks WHERE `+in, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: notebooks: %w", err)
	}
	return n, nil
}

// DeleteNotebook removes the notebook of scopes whose id or name is ref,
// with its notes.
func (s *Store) DeleteNotebook(ctx context.Context, scopes []string, ref string) error {
	where, args, order := notebookRef(ref, scopes)
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM notebooks WHERE id = (SELECT id FROM notebooks WHERE `+where+order+`)`, append(args, ref)...)
		if err != nil {
			return fmt.Errorf("store: notebook %s: %w", ref, err)
		}
		return mustChange(res, "notebook "+ref)
	})
}

// AddNote appends n to the notebook of scopes n.Notebook (an id or a
// name) and returns it as stored.
func (s *Store) AddNote(ctx context.Context, scopes []string, n Note) (Note, error) {
	if strings.TrimSpace(n.Content) == "" && strings.TrimSpace(n.Title) == "" {
		return Note{}, errors.New("store: note: the title and content are empty")
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var nb string
		where, args, order := notebookRef(n.Notebook, scopes)
		err := tx.QueryRowContext(ctx, `SELECT id FROM notebooks WHERE `+where+order, append(args, n.Notebook)...).Scan(&nb)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("notebook %s: %w", n.Notebook, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: notebook %s: %w", n.Notebook, err)
		}
		now := time.Now()
		res, err := tx.ExecContext(ctx, `INSERT INTO notes (notebook, title, content, thread, created, updated) VALUES (?, ?, ?, ?, ?, ?)`,
			nb, n.Title, n.Content, n.Thread, now.UnixNano(), now.UnixNano())
		if err != nil {
			return fmt.Errorf("store: note: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("store: note: %w", err)
		}
		n.ID, n.Notebook, n.Created, n.Updated = formatNoteID(id), nb, now, now
		return nil
	})
	if err != nil {
		return Note{}, err
	}
	return n, nil
}

// NoteEdit is a change to a note: nil fields are kept.
type NoteEdit struct {
	Title   *string
	Content *string
}

// EditNote changes the note id of the notebook of scopes nb (an id or a
// name). An id that is not a note of that notebook is an error wrapping
// ErrNotFound.
func (s *Store) EditNote(ctx context.Context, scopes []string, nb, id string, e NoteEdit) (Note, error) {
	n, ok := noteID(id)
	if !ok {
		return Note{}, fmt.Errorf("note %q: %w", id, ErrNotFound)
	}
	var out Note
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		where, args, order := notebookRef(nb, scopes)
		note, err := scanNote(tx.QueryRowContext(ctx, `SELECT `+noteColumns+` FROM notes WHERE id = ?
			AND notebook = (SELECT id FROM notebooks WHERE `+where+order+`)`, append(append([]any{n}, args...), nb)...))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("note %s in notebook %s: %w", formatNoteID(n), nb, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: note %s: %w", formatNoteID(n), err)
		}
		if e.Title != nil {
			note.Title = *e.Title
		}
		if e.Content != nil {
			note.Content = *e.Content
		}
		note.Updated = time.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE notes SET title = ?, content = ?, updated = ? WHERE id = ?`,
			note.Title, note.Content, note.Updated.UnixNano(), n); err != nil {
			return fmt.Errorf("store: note %s: %w", note.ID, err)
		}
		out = note
		return nil
	})
	return out, err
}

const noteColumns = `id, notebook, title, content, thread, created, updated`

func scanNote(sc interface{ Scan(...any) error }) (Note, error) {
	var n Note
	var id, created, updated int64
	if err := sc.Scan(&id, &n.Notebook, &n.Title, &n.Content, &n.Thread, &created, &updated); err != nil {
		return Note{}, err
	}
	n.ID, n.Created, n.Updated = formatNoteID(id), time.Unix(0, created), time.Unix(0, updated)
	return n, nil
}

// Notes returns the notes of the notebook of scopes whose id or name is
// ref, oldest first; an unknown notebook is an error wrapping ErrNotFound.
func (s *Store) Notes(ctx context.Context, scopes []string, ref string) ([]Note, error) {
	nb, err := s.Notebook(ctx, scopes, ref)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+noteColumns+` FROM notes WHERE notebook = ? ORDER BY id`, nb.ID)
	if err != nil {
		return nil, fmt.Errorf("store: notes of %s: %w", ref, err)
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		n, err := scanNote(rows)
		if err != nil {
			return nil, fmt.Errorf("store: notes of %s: %w", ref, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: notes of %s: %w", ref, err)
	}
	return out, nil
}
