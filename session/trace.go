package session

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/reinhq/rein/event"
)

// TraceStore keeps the events of turns for a later look (rein trace
// THREAD). *store.Store is one.
type TraceStore interface {
	// AppendTrace appends events of turn turnID to the thread's trace.
	AppendTrace(ctx context.Context, threadID, turnID string, events []json.RawMessage) error
}

// TraceKeeper is an event.Handler that collects a run's events so they can
// be kept in a TraceStore when the run ends. Streamed deltas are left out:
// a trace draws rounds and calls, not each token, and deltas are most of a
// turn's events. The zero value is ready to use.
type TraceKeeper struct {
	mu     sync.Mutex
	events []json.RawMessage
	turn   string
}

var _ event.Handler = (*TraceKeeper)(nil)

// Handle implements event.Handler.
func (k *TraceKeeper) Handle(e event.Event) {
	switch e.Type {
	case event.TextDelta, event.ThinkingDelta, event.CallDelta, event.ToolOutput:
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.turn == "" {
		// The first event that names the turn: an event before the engine
		// starts (the knowledge seed's sources) may not.
		k.turn = e.TurnID
	}
	k.events = append(k.events, b)
}

// Keep appends what was collected to the thread's trace in st and forgets
// it. It writes even when ctx is cancelled (an interrupted turn has a
// trace too); a failure costs only the trace.
func (k *TraceKeeper) Keep(ctx context.Context, st TraceStore, threadID string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if st == nil || len(k.events) == 0 {
		return nil
	}
	err := st.AppendTrace(context.WithoutCancel(ctx), threadID, k.turn, k.events)
	k.events = nil
	return err
}
