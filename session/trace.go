package session

import (
	"bytes"
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
	mu sync.Mutex
	// buf holds the run's events, encoded one after another by enc (each
	// ends in a newline); ends has the end of each, newline left out. One
	// growing buffer costs a few allocations a run, where a json.Marshal
	// of each event cost one more per event.
	buf  bytes.Buffer
	enc  *json.Encoder
	ends []int
	turn string
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

// traceRoom is the room a keeper's buffer starts with.
const traceRoom = 8 << 10

// Handle implements event.Handler.
func (k *TraceKeeper) Handle(e event.Event) {
	switch e.Type {
	case event.TextDelta, event.ThinkingDelta, event.CallDelta, event.ToolOutput:
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.enc == nil {
		// Room for a short turn's events at once (a tool call and the
		// answer: ~15 events, ~6 KB), not a doubling at each.
		k.buf.Grow(traceRoom)
		k.ends = make([]int, 0, 32)
		k.enc = json.NewEncoder(&k.buf)
	}
	// Encode writes nothing when it fails.
	if err := k.enc.Encode(&e); err != nil {
		return
	}
	k.ends = append(k.ends, k.buf.Len()-1)
	if k.turn == "" {
		// The first event that names the turn: an event before the engine
		// starts (the knowledge seed's sources) may not.
		k.turn = e.TurnID
	}
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
	if st == nil || len(k.ends) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	turn := k.turn // before take forgets it
	events := k.take()
	err := st.AppendTrace(ctx, threadID, turn, events)
	for _, id := range k.order {
		c := k.children[id]
		_ = st.AppendTrace(ctx, id, c.turn, c.events)
	}
	k.children, k.order = nil, nil
	return err
}

// take returns the events encoded in buf, each its own slice of it, and
// forgets them (a store may keep the slices: buf is not written again);
// k.mu is held.
func (k *TraceKeeper) take() []json.RawMessage {
	b := k.buf.Bytes()
	events := make([]json.RawMessage, len(k.ends))
	start := 0
	for i, end := range k.ends {
		events[i] = b[start:end:end]
		start = end + 1 // past the newline
	}
	k.buf, k.enc, k.ends, k.turn = bytes.Buffer{}, nil, nil, ""
	return events
}
