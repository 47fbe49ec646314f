package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/record"
)

// ThreadQuery selects a page of threads (record's): by owner, by a search
// of their titles.
type ThreadQuery = record.ThreadQuery

// ThreadFinder is a Store that lists the threads a ThreadQuery selects.
// SQLStore, MemStore and pgstore's Store are.
type ThreadFinder interface {
	// FindThreads is ListThreads with q's filters.
	FindThreads(ctx context.Context, q ThreadQuery) ([]Thread, string, error)
}

// ErrNoThreadSearch is returned by Scheduler.FindThreads when the store
// cannot filter threads.
var ErrNoThreadSearch = errors.New("session: this store cannot filter threads by owner or title")

// FindThreads lists the threads q selects, most recently updated first.
// A store that is no ThreadFinder answers only the query without filters.
func (s *Scheduler) FindThreads(ctx context.Context, q ThreadQuery) ([]Thread, string, error) {
	if f, ok := s.c.Store.(ThreadFinder); ok {
		return f.FindThreads(ctx, q)
	}
	if q.Owned || q.Search != "" {
		return nil, "", ErrNoThreadSearch
	}
	if q.Children {
		return s.ListAllThreads(ctx, q.Limit, q.Cursor)
	}
	return s.c.Store.ListThreads(ctx, q.Limit, q.Cursor)
}

// FindThreads implements ThreadFinder with store.FindThreads.
func (a *SQLStore) FindThreads(ctx context.Context, q ThreadQuery) ([]Thread, string, error) {
	return a.s.FindThreads(ctx, q)
}

// FindThreads implements ThreadFinder: ListThreads of the threads q keeps,
// the search case-insensitive (Unicode simple folding).
func (m *MemStore) FindThreads(_ context.Context, q ThreadQuery) ([]Thread, string, error) {
	if len(q.Search) > record.MaxThreadSearch {
		return nil, "", fmt.Errorf("session: a thread search of %d bytes is too long; give at most %d", len(q.Search), record.MaxThreadSearch)
	}
	search := strings.ToLower(q.Search)
	m.mu.Lock()
	all := make([]Thread, 0, len(m.threads))
	for _, t := range m.threads {
		th := t.th
		if !q.Children && !th.Parent.IsZero() {
			continue
		}
		if q.Owned && th.Owner != q.Owner {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(th.Title), search) {
			continue
		}
		th.Turns = len(t.turns)
		all = append(all, th)
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b Thread) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	start := 0
	if q.Cursor != "" {
		i := slices.IndexFunc(all, func(t Thread) bool { return t.ID == q.Cursor })
		if i < 0 {
			return nil, "", fmt.Errorf("session: cursor %q names no thread; list again from the start", q.Cursor)
		}
		start = i + 1
	}
	all = all[start:]
	if q.Limit <= 0 || q.Limit >= len(all) {
		return all, "", nil
	}
	return all[:q.Limit], all[q.Limit-1].ID, nil
}

var (
	_ ThreadFinder = (*SQLStore)(nil)
	_ ThreadFinder = (*MemStore)(nil)
)
