package rein

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/reinhq/rein/session"
)

// A thread's trace: the events of its runs (streamed deltas left out), kept
// when each run ends, as every door keeps them; rein trace draws them.

// memStore is the store of an agent without a DB: the session's memory
// store, with the threads' traces beside it.
type memStore struct {
	*session.MemStore

	mu     sync.Mutex
	traces map[string][]json.RawMessage // by thread id
}

var _ session.TraceStore = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{MemStore: session.NewMemStore(), traces: make(map[string][]json.RawMessage)}
}

// AppendTrace implements session.TraceStore.
func (m *memStore) AppendTrace(_ context.Context, threadID, _ string, events []json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.traces[threadID] = append(m.traces[threadID], events...)
	return nil
}

// trace returns the thread's trace.
func (m *memStore) trace(threadID string) []json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]json.RawMessage(nil), m.traces[threadID]...)
}

// Trace returns the events of the thread's runs that have ended, in order,
// streamed deltas left out: what `rein trace` draws (with Options.DB it
// reads the same).
func (t *Thread) Trace(ctx context.Context) ([]Event, error) {
	if t.err != nil {
		return nil, t.err
	}
	var raw []json.RawMessage
	if a := t.agent; a.st != nil {
		var err error
		if raw, err = a.st.Trace(ctx, t.id); err != nil {
			return nil, fmt.Errorf("rein: %w", err)
		}
	} else {
		raw = a.mem.trace(t.id)
	}
	out := make([]Event, 0, len(raw))
	for _, r := range raw {
		var e Event
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, fmt.Errorf("rein: the thread's trace: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}
