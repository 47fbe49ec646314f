package rein

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/session"
)

// A thread's trace: the events of its runs (streamed deltas left out), kept
// when each run ends, as every door keeps them; rein trace draws them.

// memStore is the store of an agent without a DB: the session's memory
// store, with the threads' traces beside it. A run's events are kept as
// they came and encoded when the trace is first read: a turn spends
// nothing on its trace's JSON.
type memStore struct {
	*session.MemStore

	mu     sync.Mutex
	traces map[string]*memTrace // by thread id
}

// memTrace is a thread's trace: raw, the events encoded, then events, those
// kept since it was last read.
type memTrace struct {
	raw    []json.RawMessage
	events []event.Event
}

var _ session.EventTraceStore = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{MemStore: session.NewMemStore(), traces: make(map[string]*memTrace)}
}

// AppendTrace implements session.TraceStore.
func (m *memStore) AppendTrace(_ context.Context, threadID, _ string, events []json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(threadID)
	t.encode() // the events before these go first
	t.raw = append(t.raw, events...)
	return nil
}

// AppendTraceEvents implements session.EventTraceStore.
func (m *memStore) AppendTraceEvents(_ context.Context, threadID, _ string, events []event.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(threadID)
	if t.events == nil {
		t.events = events // the store's own
	} else {
		t.events = append(t.events, events...)
		session.RecycleTraceEvents(events) // copied
	}
	return nil
}

// thread returns the thread's trace, making it; m.mu is held.
func (m *memStore) thread(id string) *memTrace {
	t := m.traces[id]
	if t == nil {
		t = &memTrace{}
		m.traces[id] = t
	}
	return t
}

// encode encodes the events kept since the trace was last read.
func (t *memTrace) encode() {
	if len(t.events) == 0 {
		return
	}
	t.raw = append(t.raw, session.EncodeTrace(t.events)...)
	// The encodings hold nothing of the events: their room goes back.
	session.RecycleTraceEvents(t.events)
	t.events = nil
}

// forget drops the thread's trace.
func (m *memStore) forget(threadID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.traces[threadID]; t != nil {
		session.RecycleTraceEvents(t.events)
		delete(m.traces, threadID)
	}
}

// trace returns the thread's trace.
func (m *memStore) trace(threadID string) []json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.traces[threadID]
	if t == nil {
		return nil
	}
	t.encode()
	return append([]json.RawMessage(nil), t.raw...)
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
