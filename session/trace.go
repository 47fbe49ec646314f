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
// turn's events. The events of a sub-agent's turn (carried by subagent
// events) are kept in the parent's trace as they came and, unwrapped, in
// the trace of the sub-agent's own thread, so that `rein trace CHILD`
// draws the child's turn. The zero value is ready to use.
type TraceKeeper struct {
	mu     sync.Mutex
	events []json.RawMessage
	turn   string
	// children holds the sub-agents' events by thread, in the order the
	// threads first appeared (order).
	children map[string]*childTrace
	order    []string
}

// childTrace is what one sub-agent's thread keeps of a run.
type childTrace struct {
	turn   string
	events []json.RawMessage
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
	if e.Type == event.Subagent && e.Sub != nil {
		k.child(*e.Sub)
	}
}

// child keeps a sub-agent's event for its own thread's trace, and its own
// children's for theirs; k.mu is held.
func (k *TraceKeeper) child(e event.Event) {
	if e.ThreadID == "" {
		return
	}
	switch e.Type {
	case event.TextDelta, event.ThinkingDelta, event.CallDelta, event.ToolOutput:
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	c := k.children[e.ThreadID]
	if c == nil {
		if k.children == nil {
			k.children = make(map[string]*childTrace)
		}
		c = &childTrace{turn: e.TurnID}
		k.children[e.ThreadID] = c
		k.order = append(k.order, e.ThreadID)
	}
	c.events = append(c.events, b)
	if e.Type == event.Subagent && e.Sub != nil {
		k.child(*e.Sub)
	}
}

// Keep appends what was collected to the thread's trace in st, and the
// sub-agents' events to their threads' traces, and forgets it. It writes
// even when ctx is cancelled (an interrupted turn has a trace too); a
// failure costs only the trace. The error is the thread's own: a
// sub-agent's thread that the store does not keep has no trace, and the
// parent's trace still holds its events.
func (k *TraceKeeper) Keep(ctx context.Context, st TraceStore, threadID string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if st == nil || len(k.events) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	err := st.AppendTrace(ctx, threadID, k.turn, k.events)
	k.events = nil
	for _, id := range k.order {
		c := k.children[id]
		_ = st.AppendTrace(ctx, id, c.turn, c.events)
	}
	k.children, k.order = nil, nil
	return err
}
