package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/llm"
)

// MemStore is a Store that keeps everything in memory, for tests and for
// servers that need no persistence. Nothing outlives the process, so there
// is never a crashed turn to normalize.
type MemStore struct {
	mu      sync.Mutex
	threads map[string]*memThread
}

type memThread struct {
	th     Thread
	turns  []Turn
	items  []llm.Item
	index  map[string]int // position in items, by item id; nil while the history is short (find)
	steers []llm.Item
	read   map[string]bool // ids of steers recorded in the history
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{threads: make(map[string]*memThread)}
}

var _ Store = (*MemStore)(nil)

// SaveThread implements Store.
func (m *MemStore) SaveThread(_ context.Context, th Thread) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	th.Settings.Approved = slices.Clone(th.Settings.Approved)
	th.Settings.KBs = slices.Clone(th.Settings.KBs)
	if t, ok := m.threads[th.ID]; ok {
		// The link is the first save's, as the SQL stores keep it.
		th.Parent = t.th.Parent
		th.Owner = t.th.Owner // set once, at creation
		if th.Title == "" {
			th.Title = t.th.Title // named by the first user message
		}
		t.th = th
		return nil
	}
	m.threads[th.ID] = &memThread{th: th}
	return nil
}

// LoadThread implements Store.
func (m *MemStore) LoadThread(_ context.Context, id string) (*Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, id)
	}
	snap := &Snapshot{Thread: t.th, Turns: slices.Clone(t.turns), Items: slices.Clone(t.items)}
	snap.Thread.Turns = len(t.turns)
	for _, it := range t.steers {
		running := slices.ContainsFunc(t.turns, func(tu Turn) bool { return tu.ID == it.TurnID && tu.Status == TurnInProgress })
		if t.read[it.ID] || running {
			// Read already, or the running turn's scheduler holds it.
			continue
		}
		if snap.Steers == nil {
			snap.Steers = make(map[string][]llm.Item)
		}
		snap.Steers[it.TurnID] = append(snap.Steers[it.TurnID], it)
	}
	return snap, nil
}

// ListThreads implements Store: the threads users started.
func (m *MemStore) ListThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error) {
	return m.FindThreads(ctx, ThreadQuery{Limit: limit, Cursor: cursor})
}

// ListAllThreads implements ThreadTree.
func (m *MemStore) ListAllThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error) {
	return m.FindThreads(ctx, ThreadQuery{Limit: limit, Cursor: cursor, Children: true})
}

// ListChildren implements ThreadTree.
func (m *MemStore) ListChildren(_ context.Context, id string) ([]Thread, error) {
	m.mu.Lock()
	var out []Thread
	for _, t := range m.threads {
		if t.th.Parent.ThreadID == id {
			th := t.th
			th.Turns = len(t.turns)
			out = append(out, th)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Thread) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Record implements Store.
func (m *MemStore) Record(_ context.Context, threadID string, it llm.Item) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[threadID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrThreadNotFound, threadID)
	}
	if it.Role == llm.RoleUser && it.Origin == llm.OriginInput && t.th.Title == "" {
		// The first thing the user said names the thread, as in the
		// stores on disk.
		t.th.Title = memTitle(it.Text())
	}
	if it.Origin == llm.OriginSteer && it.ID != "" {
		if t.read == nil {
			t.read = make(map[string]bool)
		}
		t.read[it.ID] = true
	}
	if it.ID != "" {
		if i, ok := t.find(it.ID); ok {
			// History is append-only: only a pause placeholder is
			// replaced, by its answer.
			if res := t.items[i].Result(); t.items[i].Role != llm.RoleTool || res == nil || res.Status != llm.ResultPending {
				return fmt.Errorf("session: thread %s: item %s is recorded and is not a pause placeholder; history is append-only", threadID, it.ID)
			}
			t.items[i] = it
			return nil
		}
		if t.index != nil {
			t.index[it.ID] = len(t.items)
		}
	}
	if t.items == nil {
		// Room for a short turn's items (input, a call, its result, the
		// answer) at once, not a doubling at each.
		t.items = make([]llm.Item, 0, firstItems)
	}
	t.items = append(t.items, it)
	return nil
}

// firstItems is the room a thread's history starts with.
const firstItems = 8

// indexFrom is the history length from which a thread's items are found
// by an index: a short history (most threads: a turn or two) is scanned,
// which costs less than the map would, in time and in memory per thread.
const indexFrom = 32

// find returns the position of the item with id in t.items; m.mu is held.
// It builds t.index once the history is long enough for one.
func (t *memThread) find(id string) (int, bool) {
	if t.index == nil && len(t.items) >= indexFrom {
		t.index = make(map[string]int, 2*len(t.items))
		for i := range t.items {
			if t.items[i].ID != "" {
				t.index[t.items[i].ID] = i
			}
		}
	}
	if t.index != nil {
		i, ok := t.index[id]
		return i, ok
	}
	for i := len(t.items) - 1; i >= 0; i-- {
		if t.items[i].ID == id {
			return i, true
		}
	}
	return 0, false
}

// SaveTurn implements Store.
func (m *MemStore) SaveTurn(_ context.Context, tu Turn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[tu.ThreadID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrThreadNotFound, tu.ThreadID)
	}
	for i := range t.turns {
		if t.turns[i].ID == tu.ID {
			tu.Seq = t.turns[i].Seq
			keepOutputSpec(&tu, t.turns[i])
			t.turns[i] = tu
			return nil
		}
	}
	tu.Seq = len(t.turns) + 1
	t.turns = append(t.turns, tu)
	return nil
}

// ClaimTurn implements Store: the turn becomes inProgress unless another
// turn of the thread is, or an earlier one is paused (for a new or queued
// turn), or the turn has ended.
func (m *MemStore) ClaimTurn(_ context.Context, tu Turn) (Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[tu.ThreadID]
	if !ok {
		return Claim{}, fmt.Errorf("%w: %q", ErrThreadNotFound, tu.ThreadID)
	}
	at := -1
	for i, o := range t.turns {
		switch {
		case o.ID == tu.ID:
			at = i
		case o.Status == TurnInProgress:
			return Claim{}, busyError{fmt.Errorf("thread %s: turn %s is running in another scheduler of this store; one turn runs per thread: wait for it to end, or interrupt it there", tu.ThreadID, o.ID)}
		}
	}
	resume := at >= 0 && t.turns[at].Status == TurnPaused
	if at >= 0 && t.turns[at].Status != TurnQueued && !resume {
		return Claim{}, fmt.Errorf("session: thread %s: turn %s is %s; it cannot be claimed", tu.ThreadID, tu.ID, t.turns[at].Status)
	}
	if !resume {
		for _, o := range t.turns {
			if o.ID != tu.ID && o.Status == TurnPaused {
				return Claim{}, fmt.Errorf("%w (turn %s)", ErrTurnPaused, o.ID)
			}
		}
	}
	tu.Status = TurnInProgress
	if at >= 0 {
		tu.Seq = t.turns[at].Seq
		keepOutputSpec(&tu, t.turns[at])
		t.turns[at] = tu
	} else {
		tu.Seq = len(t.turns) + 1
		t.turns = append(t.turns, tu)
	}
	return Claim{Items: len(t.items)}, nil
}

// keepOutputSpec keeps the structured answer a stored turn asks for when
// the record that replaces it names none, as the stores on disk do.
func keepOutputSpec(tu *Turn, stored Turn) {
	if tu.OutputSpec == nil {
		tu.OutputSpec = stored.OutputSpec
	}
}

// AddSteer implements Store.
func (m *MemStore) AddSteer(_ context.Context, threadID, _ string, it llm.Item) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[threadID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrThreadNotFound, threadID)
	}
	t.steers = append(t.steers, it)
	return nil
}

// Steers returns the steered inputs accepted for a thread, in order.
func (m *MemStore) Steers(threadID string) []llm.Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.threads[threadID]; ok {
		return slices.Clone(t.steers)
	}
	return nil
}

// memTitle is a one-line title of at most 80 runes, as the stores on disk
// make them.
func memTitle(s string) string {
	if !oneLine(s) {
		s = strings.Join(strings.Fields(s), " ")
	}
	if len(s) <= 80 {
		// No more runes than bytes.
		return s
	}
	if r := []rune(s); len(r) > 80 {
		return strings.TrimSpace(string(r[:79])) + "…"
	}
	return s
}

// oneLine reports whether s is already what strings.Fields and a join by
// single spaces make of it: ASCII words between single spaces, no space
// at either end (any other byte may be a Unicode space: not known).
func oneLine(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80 || c < ' ':
			return false
		case c == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == ' '):
			return false
		}
	}
	return true
}
