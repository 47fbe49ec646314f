package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// ErrInvalidName: a knowledge base or notebook name that is empty, too
// long, or holds characters other than letters, digits, '.', '_' and '-'.
var ErrInvalidName = errors.New("store: invalid name: use 1 to 64 letters, digits, '.', '_' or '-'")

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// checkName validates a knowledge base or notebook name.
func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q: %w", name, ErrInvalidName)
	}
	return nil
}

// KB describes a knowledge base: named files, cut into chunks that are
// searched with SQLite FTS5 and ranked by BM25.
type KB struct {
	Name    string    `json:"name"`
	Files   int       `json:"files"`
	Chunks  int       `json:"chunks"`
	Bytes   int64     `json:"bytes"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// KBChunk is a piece of a file: its lines StartLine..EndLine (1-based,
// inclusive) and their text.
type KBChunk struct {
	StartLine int
	EndLine   int
	Text      string
}

// KBDoc is a file to put into a knowledge base, already chunked.
type KBDoc struct {
	// Path names the file in references; it is unique within a base.
	Path    string
	Size    int64
	ModTime time.Time
	// Hash identifies the content: a file whose hash is unchanged is kept
	// as it is.
	Hash   string
	Chunks []KBChunk
}

// KBPut counts what PutKBDocs did.
type KBPut struct {
	Added     int
	Updated   int
	Unchanged int
	Chunks    int // chunks written
}

// PutKBDocs adds docs to the knowledge base name, creating it if needed.
// A doc whose path is already there replaces it, unless its hash is
// unchanged. All docs are written in one transaction, so callers adding
// many files should pass them in batches of a few hundred: other writers
// (turns recording items) wait for the whole batch.
func (s *Store) PutKBDocs(ctx context.Context, name string, docs []KBDoc) (KBPut, error) {
	if err := checkName(name); err != nil {
		return KBPut{}, err
	}
	var put KBPut
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		put = KBPut{}
		now := time.Now().UnixNano()
		if _, err := tx.ExecContext(ctx, `INSERT INTO kbs (name, created, updated) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET updated = excluded.updated`, name, now, now); err != nil {
			return fmt.Errorf("store: kb %s: %w", name, err)
		}
		for _, d := range docs {
			var id int64
			var hash string
			err := tx.QueryRowContext(ctx, `SELECT id, hash FROM kb_files WHERE kb = ? AND path = ?`, name, d.Path).Scan(&id, &hash)
			switch {
			case err == nil && hash == d.Hash:
				put.Unchanged++
				continue
			case err == nil:
				if err := deleteKBFile(ctx, tx, id); err != nil {
					return err
				}
				put.Updated++
			case errors.Is(err, sql.ErrNoRows):
				put.Added++
			default:
				return fmt.Errorf("store: kb %s: %s: %w", name, d.Path, err)
			}
			if err := insertKBDoc(ctx, tx, name, d, now); err != nil {
				return err
			}
			put.Chunks += len(d.Chunks)
		}
		return nil
	})
	if err != nil {
		return KBPut{}, err
	}
	return put, nil
}

func insertKBDoc(ctx context.Context, tx *sql.Tx, kb string, d KBDoc, now int64) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO kb_files (kb, path, size, mtime, hash, added) VALUES (?, ?, ?, ?, ?, ?)`,
		kb, d.Path, d.Size, d.ModTime.UnixNano(), d.Hash, now)
	if err != nil {
		return fmt.Errorf("store: kb %s: %s: %w", kb, d.Path, err)
	}
	file, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("store: kb %s: %s: %w", kb, d.Path, err)
	}
	chunk, err := tx.PrepareContext(ctx, `INSERT INTO kb_chunks (file, start_line, end_line) VALUES (?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: kb %s: %w", kb, err)
	}
	defer chunk.Close()
	text, err := tx.PrepareContext(ctx, `INSERT INTO kb_text (rowid, text) VALUES (?, ?)`)
	if err != nil {
		return fmt.Errorf("store: kb %s: %w", kb, err)
	}
	defer text.Close()
	for _, c := range d.Chunks {
		res, err := chunk.ExecContext(ctx, file, c.StartLine, c.EndLine)
		if err != nil {
			return fmt.Errorf("store: kb %s: %s: %w", kb, d.Path, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("store: kb %s: %s: %w", kb, d.Path, err)
		}
		if _, err := text.ExecContext(ctx, id, c.Text); err != nil {
			return fmt.Errorf("store: kb %s: %s: %w", kb, d.Path, err)
		}
	}
	return nil
}

// deleteKBFile removes a file with its chunks and their indexed text.
func deleteKBFile(ctx context.Context, tx *sql.Tx, file int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM kb_text WHERE rowid IN (SELECT id FROM kb_chunks WHERE file = ?)`, file); err != nil {
		return fmt.Errorf("store: kb file %d: %w", file, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kb_files WHERE id = ?`, file); err != nil {
		return fmt.Errorf("store: kb file %d: %w", file, err)
	}
	return nil
}

const kbColumns = `name, created, updated,
	(SELECT count(*) FROM kb_files f WHERE f.kb = kbs.name),
	(SELECT coalesce(sum(size), 0) FROM kb_files f WHERE f.kb = kbs.name),
	(SELECT count(*) FROM kb_chunks c JOIN kb_files f ON f.id = c.file WHERE f.kb = kbs.name)`

func scanKB(sc interface{ Scan(...any) error }) (KB, error) {
	var k KB
	var created, updated int64
	if err := sc.Scan(&k.Name, &created, &updated, &k.Files, &k.Bytes, &k.Chunks); err != nil {
		return KB{}, err
	}
	k.Created, k.Updated = time.Unix(0, created), time.Unix(0, updated)
	return k, nil
}

// KB returns the knowledge base name, or an error wrapping ErrNotFound.
func (s *Store) KB(ctx context.Context, name string) (KB, error) {
	k, err := scanKB(s.db.QueryRowContext(ctx, `SELECT `+kbColumns+` FROM kbs WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return KB{}, fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return KB{}, fmt.Errorf("store: knowledge base %s: %w", name, err)
	}
	return k, nil
}

// KBExists returns an error wrapping ErrNotFound when there is no
// knowledge base name; it is cheap, unlike KB, which counts its files and
// passages.
func (s *Store) KBExists(ctx context.Context, name string) error {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM kbs WHERE name = ?`, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: knowledge base %s: %w", name, err)
	}
	return nil
}

// KBs returns every knowledge base, by name.
func (s *Store) KBs(ctx context.Context) ([]KB, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+kbColumns+` FROM kbs ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: knowledge bases: %w", err)
	}
	defer rows.Close()
	var out []KB
	for rows.Next() {
		k, err := scanKB(rows)
		if err != nil {
			return nil, fmt.Errorf("store: knowledge bases: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: knowledge bases: %w", err)
	}
	return out, nil
}

// DeleteKB removes the knowledge base name with its files and chunks.
func (s *Store) DeleteKB(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM kb_text WHERE rowid IN
			(SELECT c.id FROM kb_chunks c JOIN kb_files f ON f.id = c.file WHERE f.kb = ?)`, name); err != nil {
			return fmt.Errorf("store: delete knowledge base %s: %w", name, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM kbs WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("store: delete knowledge base %s: %w", name, err)
		}
		return mustChange(res, "knowledge base "+name)
	})
}

// KBFile is one file of a knowledge base.
type KBFile struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	Chunks  int       `json:"chunks"`
	ModTime time.Time `json:"mtime"`
}

// KBFiles returns the files of the knowledge base name, by path; an
// unknown base is an error wrapping ErrNotFound.
func (s *Store) KBFiles(ctx context.Context, name string) ([]KBFile, error) {
	if err := s.KBExists(ctx, name); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT path, size, mtime, (SELECT count(*) FROM kb_chunks c WHERE c.file = f.id)
		FROM kb_files f WHERE kb = ? ORDER BY path`, name)
	if err != nil {
		return nil, fmt.Errorf("store: knowledge base %s: %w", name, err)
	}
	defer rows.Close()
	var out []KBFile
	for rows.Next() {
		var f KBFile
		var mtime int64
		if err := rows.Scan(&f.Path, &f.Size, &mtime, &f.Chunks); err != nil {
			return nil, fmt.Errorf("store: knowledge base %s: %w", name, err)
		}
		f.ModTime = time.Unix(0, mtime)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: knowledge base %s: %w", name, err)
	}
	return out, nil
}
