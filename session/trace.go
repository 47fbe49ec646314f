package session

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"sync"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// TraceStore keeps the events of turns for a later look (rein trace
// THREAD). *store.Store is one.
type TraceStore interface {
	// AppendTrace appends events of turn turnID to the thread's trace.
	AppendTrace(ctx context.Context, threadID, turnID string, events []json.RawMessage) error
}

// EventTraceStore is a TraceStore that takes a run's events as they are and
// encodes them only when its trace is read (EncodeTrace): a store in
// memory, whose runs then spend nothing on their trace's JSON. The events
// handed to AppendTraceEvents are the store's own: copies made for it,
// which no run changes after.
type EventTraceStore interface {
	TraceStore
	// AppendTraceEvents appends events of turn turnID to the thread's
	// trace; reading them must give what AppendTrace would have been
	// given (EncodeTrace). A store done with the slice (it encoded the
	// events, or forgot the thread) may hand it back to the keepers with
	// RecycleTraceEvents.
	AppendTraceEvents(ctx context.Context, threadID, turnID string, events []event.Event) error
}

// traceRooms holds rooms for a run's events (traceRoom of them, ~5 KB)
// that nothing reads any more: a keeper takes one for its run instead of
// making one, which was a fifth of a library turn's bytes.
var traceRooms sync.Pool // of *[traceRoom]event.Event

// newTraceRoom returns an empty slice with room for traceRoom events.
func newTraceRoom() []event.Event {
	if r, ok := traceRooms.Get().(*[traceRoom]event.Event); ok {
		return r[:0]
	}
	return make([]event.Event, 0, traceRoom)
}

// RecycleTraceEvents gives back a slice of events that a TraceKeeper
// handed to an EventTraceStore, for a keeper's next run. The caller gives
// up the slice: nothing may read or write it afterwards (nor any slice of
// the same array). A slice of another size is left to the collector.
func RecycleTraceEvents(events []event.Event) {
	if cap(events) != traceRoom {
		return
	}
	r := (*[traceRoom]event.Event)(events[:traceRoom])
	// What the events pointed to is not kept alive by the pool.
	clear(r[:])
	traceRooms.Put(r)
}

// TraceKeeper is an event.Handler that collects a run's events so they can
// be kept in a TraceStore when the run ends. Streamed deltas are left out:
// a trace draws rounds and calls, not each token, and deltas are most of a
// turn's events. The events of a sub-agent's turn (carried by subagent
// events) are kept in the parent's trace as they came and, unwrapped, in
// the trace of the sub-agent's own thread, so that `rein trace CHILD`
// draws the child's turn. The zero value is ready to use.
//
// Nothing is encoded while the run goes: each event is copied, with what
// it points to that the engine may change afterwards (the history slot of
// an item, which a pause's answer replaces; the running usage), and
// encoded when the run ends (Keep), or, for an EventTraceStore, when the
// trace is read.
type TraceKeeper struct {
	mu     sync.Mutex
	events []event.Event
	turn   string
	// children holds the sub-agents' events by thread, in the order the
	// threads first appeared (order).
	children map[string]*childTrace
	order    []string
	// own holds the copies the events point to.
	own owned
}

// childTrace is what one sub-agent's thread keeps of a run.
type childTrace struct {
	turn   string
	events []event.Event
}

var _ event.Handler = (*TraceKeeper)(nil)

// traceRoom is how many events a keeper has room for at first: a short
// turn's (a tool call and the answer: ~15 events), not a doubling at each.
const traceRoom = 16

// Handle implements event.Handler.
func (k *TraceKeeper) Handle(e event.Event) { k.handle(&e) }

// handle is Handle of *e, which it does not keep.
func (k *TraceKeeper) handle(e *event.Event) {
	if streamed(e.Type) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.events == nil {
		k.events = newTraceRoom()
	}
	// Copied into its place and made the keeper's there: no copy of the
	// event on the stack (see fanout in turn.go).
	k.events = append(k.events, *e)
	k.own.event(&k.events[len(k.events)-1])
	if k.turn == "" {
		// The first event that names the turn: an event before the engine
		// starts (the knowledge seed's sources) may not.
		k.turn = e.TurnID
	}
	if e.Type == event.Subagent && e.Sub != nil {
		k.child(e.Sub)
	}
}

// streamed reports whether events of type t are streamed pieces, which a
// trace leaves out.
func streamed(t event.Type) bool {
	switch t {
	case event.TextDelta, event.ThinkingDelta, event.CallDelta, event.ToolOutput:
		return true
	}
	return false
}

// child keeps a sub-agent's event for its own thread's trace, and its own
// children's for theirs; k.mu is held.
func (k *TraceKeeper) child(e *event.Event) {
	if e.ThreadID == "" || streamed(e.Type) {
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
	c.events = append(c.events, *e)
	k.own.event(&c.events[len(c.events)-1])
	if e.Type == event.Subagent && e.Sub != nil {
		k.child(e.Sub)
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
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	err := appendTrace(ctx, st, threadID, k.turn, k.events)
	for _, id := range k.order {
		c := k.children[id]
		_ = appendTrace(ctx, st, id, c.turn, c.events)
	}
	// The store may keep what it was given: the next run starts anew.
	k.events, k.turn, k.children, k.order, k.own = nil, "", nil, nil, owned{}
	return err
}

// appendTrace hands events to st: as they are to an EventTraceStore,
// encoded to any other.
func appendTrace(ctx context.Context, st TraceStore, threadID, turnID string, events []event.Event) error {
	if es, ok := st.(EventTraceStore); ok {
		return es.AppendTraceEvents(ctx, threadID, turnID, events)
	}
	err := st.AppendTrace(ctx, threadID, turnID, EncodeTrace(events))
	// The encodings hold nothing of the events, and nothing else does.
	RecycleTraceEvents(events)
	return err
}

// EncodeTrace returns each event's JSON encoding, as json.Marshal writes
// it: what a TraceStore is given. An event that cannot be encoded is left
// out. The encodings share one buffer: a few allocations for a run, where
// a json.Marshal of each event costs one more per event.
func EncodeTrace(events []event.Event) []json.RawMessage {
	var buf bytes.Buffer
	// Most events of a run are 200–600 bytes.
	buf.Grow(400 * len(events))
	enc := json.NewEncoder(&buf)
	ends := make([]int, 0, len(events))
	for i := range events {
		// Encode writes nothing when it fails.
		if enc.Encode(&events[i]) == nil {
			ends = append(ends, buf.Len()-1)
		}
	}
	b := buf.Bytes()
	out := make([]json.RawMessage, len(ends))
	start := 0
	for i, end := range ends {
		out[i] = b[start:end:end]
		start = end + 1 // past the newline
	}
	return out
}

// owned makes the copies a kept event points to, a few at a time: a run's
// items, usages and summaries share a handful of allocations instead of
// one each. A copy is never written again once made, so what points to it
// reads the same as long as it is kept.
type owned struct {
	items []llm.Item
	parts []llm.Part
	usage []llm.Usage
}

// ownedRoom is how many copies of a kind one allocation makes room for.
const ownedRoom = 4

// event makes *e the keeper's: what it points to is copied — the item
// (its slot in the history is replaced by a pause's answer) and its parts,
// the usage, pause, summary, context report and extra fields, and a
// sub-agent's event likewise. Strings, and what an item's parts point to
// (calls, results), are never changed once recorded: they are shared.
func (o *owned) event(e *event.Event) {
	if e.Item != nil {
		e.Item = o.item(e.Item)
	}
	if e.Usage != nil {
		e.Usage = put(&o.usage, *e.Usage)
	}
	if e.Pause != nil {
		p := *e.Pause
		e.Pause = &p
	}
	if e.Turn != nil {
		t := *e.Turn
		e.Turn = &t
	}
	if e.Context != nil {
		c := *e.Context
		e.Context = &c
	}
	if e.Extra != nil {
		e.Extra = maps.Clone(e.Extra)
	}
	if e.Sub != nil {
		s := new(event.Event)
		*s = *e.Sub
		o.event(s)
		e.Sub = s
	}
}

// item returns a copy of it with a copy of its parts.
func (o *owned) item(it *llm.Item) *llm.Item {
	c := put(&o.items, *it)
	if n := len(it.Parts); n > ownedRoom {
		c.Parts = append([]llm.Part(nil), it.Parts...)
	} else if n > 0 {
		if len(o.parts) < n {
			o.parts = make([]llm.Part, 2*ownedRoom)
		}
		c.Parts = o.parts[:n:n]
		copy(c.Parts, it.Parts)
		o.parts = o.parts[n:]
	}
	return c
}

// put copies v into the room left in *free, making room for ownedRoom
// more when none is left, and returns the copy.
func put[T any](free *[]T, v T) *T {
	if len(*free) == 0 {
		*free = make([]T, ownedRoom)
	}
	p := &(*free)[0]
	*p = v
	*free = (*free)[1:]
	return p
}
