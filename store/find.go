package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/record"
)

// AmbiguousError: a thread id prefix matches more than one thread. It
// lists the candidates (up to maxCandidates) so the user can pick, and
// matches ErrNotFound's sibling ErrAmbiguous.
type AmbiguousError struct {
	Prefix     string
	Candidates []record.Thread
	// More says there are further matches beyond Candidates.
	More bool
}

// ErrAmbiguous: a thread id prefix matches several threads.
var ErrAmbiguous = errors.New("store: the id prefix matches several threads")

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "thread %q matches %d threads; give more of its id:", e.Prefix, len(e.Candidates))
	if e.More {
		b.Reset()
		fmt.Fprintf(&b, "thread %q matches more than %d threads; give more of its id:", e.Prefix, len(e.Candidates))
	}
	for _, t := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s", t.ID, t.Title)
	}
	return b.String()
}

// Is makes the error match ErrAmbiguous.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// maxCandidates bounds the threads an ambiguous prefix lists.
const maxCandidates = 10

// threadPrefix is the part every thread id starts with, which a user may
// leave out of a prefix ("k3j4" for "thread_k3j4…").
const threadPrefix = "thread_"

// FindThread returns the thread whose id is id, or else the one thread
// whose id starts with id (with or without "thread_"), as users give ids
// as git users give commits. No match wraps ErrNotFound; several, an
// *AmbiguousError listing them.
func (s *Store) FindThread(ctx context.Context, id string) (record.Thread, error) {
	id = strings.TrimSpace(id)
	if t, err := s.Thread(ctx, id); err == nil || !errors.Is(err, ErrNotFound) {
		return t, err
	}
	if id == "" {
		return record.Thread{}, fmt.Errorf("thread %q: %w", id, ErrNotFound)
	}
	prefixes := []string{id}
	if !strings.HasPrefix(id, threadPrefix) {
		prefixes = append(prefixes, threadPrefix+id)
	}
	var found []record.Thread
	seen := map[string]bool{}
	for _, p := range prefixes {
		// A range of the primary key: the ids from p up to the first
		// string after every one starting with p.
		rows, err := s.db.QueryContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`,
			p, p+"\U0010FFFF", maxCandidates+1)
		if err != nil {
			return record.Thread{}, fmt.Errorf("store: thread %s: %w", id, err)
		}
		for rows.Next() {
			t, err := scanThread(rows)
			if err != nil {
				rows.Close()
				return record.Thread{}, fmt.Errorf("store: thread %s: %w", id, err)
			}
			if !seen[t.ID] && strings.HasPrefix(t.ID, p) {
				seen[t.ID] = true
				found = append(found, t)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return record.Thread{}, fmt.Errorf("store: thread %s: %w", id, err)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return record.Thread{}, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	e := &AmbiguousError{Prefix: id, Candidates: found}
	if len(found) > maxCandidates {
		e.Candidates, e.More = found[:maxCandidates], true
	}
	return record.Thread{}, e
}

// WorkspaceThreads lists the threads whose workspace is dir, most recently
// updated first, at most limit of them (all when limit <= 0): what `rein
// chat --continue` and `--resume` choose from.
func (s *Store) WorkspaceThreads(ctx context.Context, dir string, limit int) ([]record.Thread, error) {
	q := `SELECT ` + threadColumns + ` FROM threads WHERE workspace = ? ORDER BY updated DESC, id DESC`
	args := []any{dir}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: threads of %s: %w", dir, err)
	}
	defer rows.Close()
	var out []record.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("store: threads of %s: %w", dir, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: threads of %s: %w", dir, err)
	}
	return out, nil
}
