package loop

import (
	"sync/atomic"

	"github.com/reinhq/rein/llm"
)

// Carry is what a turn leaves for the thread's next turn (Outcome.Carry →
// Turn.Carry): the context the next turn sends, in a slice the engine may
// append to, and the call ids in it. With it a turn starts in O(its own
// items): it neither copies the thread's history nor reads its call ids
// again. Without it (nil, or one that does not match the turn's History) a
// turn copies the context from History, as it always may.
//
// A Carry is used by one turn at most: a second turn given the same Carry
// starts from History. It stands for the thread as its turn left it — the
// History that turn was given, with the turn's Outcome.Items appended — and
// matches a Turn whose History has that length and that last item; give it
// back only with that history. It holds no state a caller can see or
// change.
type Carry struct {
	taken atomic.Bool
	// prior and items are the context the next turn sends (State.prior
	// and State.History), nil when the history is short (see carryMin),
	// cannot be used as is (the turn recorded a directive, which later
	// turns leave out, or a guard shortened items only for that turn) or
	// would save no copy (the context was all the caller's but for the
	// turn's own items). The engine owns items' array beyond len(items);
	// prior is a run of the caller's history, read only.
	prior, items []llm.Item
	// ids are the call ids of the thread, nil when never needed.
	ids map[string]struct{}
	// thread and last identify the thread's history the Carry stands for:
	// its length and the id of its last item.
	thread int
	last   string
}

// carry is a turn's bookkeeping for its Carry, kept in its State so that
// a turn resumed in the same process hands one on; a State read back from
// JSON has its zero value (the turn then hands on no Carry, and rebuilds
// its call ids when it needs them).
type carry struct {
	// ids are the call ids of the thread and of the turn, nil until a
	// call id is first checked.
	ids map[string]struct{}
	// base is the thread's history the turn started from (the caller's,
	// read only), for building ids: it holds the calls before the latest
	// compaction, which the context leaves out. Nil when the turn did not
	// start in this process.
	base []llm.Item
	// thread and last identify the History the turn started from; known
	// is false when the turn did not start in this process.
	thread int
	last   string
	known  bool
	// dirty: a guard shortened items of the history for this turn only.
	dirty bool
}

// matches reports whether c stands for the thread history h.
func (c *Carry) matches(h []llm.Item) bool {
	if len(h) != c.thread {
		return false
	}
	if len(h) == 0 {
		return c.last == ""
	}
	return c.last != "" && h[len(h)-1].ID == c.last
}

// lastID returns the id of the last item of h, or "".
func lastID(h []llm.Item) string {
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1].ID
}

// begin sets up a new turn's history: from t.Carry when it stands for
// t.History and no other turn took it, otherwise from t.History's context
// — held apart as the turn's prior when the engine splits requests
// (Engine.split), copied otherwise.
//
// The carried items are reused only when the engine has no context window
// guard: a guard may shorten old items in place for one turn (History.
// Shorten), and items of earlier turns, which their outcomes and events
// still point at, are never written. (A guard counts the whole history
// when a turn starts anyway.) The call ids are reused either way.
func (e *Engine) begin(st *State, t Turn) {
	st.carry = carry{thread: len(t.History), last: lastID(t.History), known: true, base: t.History}
	c := &st.carry
	reused := false
	if k := t.Carry; k != nil && k.matches(t.History) && k.taken.CompareAndSwap(false, true) {
		c.ids = k.ids
		if k.items != nil && e.o.Window == nil && (k.prior == nil || e.split) {
			st.prior, st.History, reused = k.prior, k.items, true
		}
	}
	switch {
	case reused:
	case e.split:
		st.prior, st.History = contextParts(t.History)
	default:
		st.History = contextOf(t.History)
	}
	st.TurnStart = st.size()
}

// handOn returns the Carry of a turn that ended (not paused), or nil when
// the turn did not start in this process or the Carry would hold nothing.
func (r *run) handOn() *Carry {
	st := r.st
	c := &st.carry
	if !c.known {
		return nil
	}
	items := st.TurnItems()
	k := &Carry{ids: c.ids, thread: c.thread + len(items), last: c.last}
	if len(items) > 0 {
		k.last = items[len(items)-1].ID
	}
	// What the turn copied is worth handing on; a context that was the
	// caller's but for this turn's items is not (the next turn holds the
	// caller's history apart again, at no cost).
	copied := st.prior == nil || st.turn() > 0
	if st.size() >= carryMin && copied && !c.dirty && r.clean(items) {
		k.prior, k.items = st.prior, st.History
	}
	if k.items == nil && k.ids == nil {
		// Nothing to save the next turn (a short thread without calls):
		// an idle thread holds nothing.
		return nil
	}
	return k
}

// turnRoom is the least room contextOf leaves after a thread's context: a
// few short turns' items (a turn of one call is four: input, call, result,
// answer), which a thread going on with a Carry appends in place. To it
// contextOf adds a sixteenth of the context (roomShare), so that on a long
// thread a turn of many rounds does not copy the context a second time
// when it outgrows the room, while a short thread's turn start allocates
// and zeroes little: the room is what a turn on a short thread mostly
// costs (128 items, 8 KB, were half of a 1-round turn on an empty thread),
// and on a long one a sixteenth of the bytes its copy costs anyway.
const (
	turnRoom  = 16
	roomShare = 16
)

// carryMin is the shortest history whose items a Carry keeps. A Carry
// keeps the room beyond them too (what contextOf left, or what append last
// grew), held as long as the thread is: worth it for a long thread, whose
// copy it saves, but not for a short one (a server holds many idle
// threads), which costs little to copy.
const carryMin = 256

// clean reports whether a turn's items are its context in a later turn as
// they stand: no directive (left out of later turns) and no compaction
// after the history's first item (a later turn starts at it).
func (r *run) clean(items []llm.Item) bool {
	for i := range items {
		switch items[i].Origin {
		case llm.OriginDirective:
			return false
		case OriginCompaction:
			if r.st.TurnStart+i > 0 {
				return false
			}
		}
	}
	return true
}

// uniqueID keeps call ids unique within the thread: an empty id, or one a
// server repeats across rounds, is replaced by a fresh one. The set of the
// thread's ids is built the first time a turn checks one (so a turn without
// calls never reads the history for them) and then kept up to date, and
// handed on to the next turn.
func (r *run) uniqueID(id string) string {
	ids := r.callIDs()
	if id != "" {
		// One probe instead of a lookup and an insert: the set grows
		// exactly when id is new.
		n := len(ids)
		ids[id] = struct{}{}
		if len(ids) > n {
			return id
		}
	}
	id = NewID("call")
	ids[id] = struct{}{}
	return id
}

// callIDs returns the set of call ids of the thread, building it if
// needed: from the thread's history the turn started from (calls before a
// compaction included) and the turn's items; for a turn resumed from JSON,
// from its context.
func (r *run) callIDs() map[string]struct{} {
	c := &r.st.carry
	if c.ids != nil {
		return c.ids
	}
	h, turn := r.st.prior, r.st.History
	if c.known {
		h, turn = c.base, r.st.TurnItems()
	}
	// Sized for the thread's calls at once: growing a map of a long
	// thread's ids step by step costs more than the turn's first rounds.
	// Room for 8 more is a map of one group (two allocations, where 16
	// made four) on a thread without calls yet.
	c.ids = make(map[string]struct{}, countCalls(h)+countCalls(turn)+8)
	addCallIDs(c.ids, h)
	addCallIDs(c.ids, turn)
	c.base = nil
	return c.ids
}

// countCalls returns the number of calls in h.
func countCalls(h []llm.Item) int {
	n := 0
	for i := range h {
		if h[i].Role != llm.RoleAssistant {
			continue
		}
		for _, p := range h[i].Parts {
			if p.Kind == llm.PartCall && p.Call != nil {
				n++
			}
		}
	}
	return n
}

func addCallIDs(ids map[string]struct{}, h []llm.Item) {
	for i := range h {
		if h[i].Role != llm.RoleAssistant {
			continue
		}
		for _, p := range h[i].Parts {
			if p.Kind == llm.PartCall && p.Call != nil {
				ids[p.Call.ID] = struct{}{}
			}
		}
	}
}

// contextOf returns the history to send for a new turn: everything from the
// latest compaction on except earlier turns' directives, in a slice the
// engine owns, with room for a short turn's items and a sixteenth of the
// context (turnRoom, roomShare); a longer turn grows it as append does.
// Runs between directives are copied whole.
func contextOf(h []llm.Item) []llm.Item {
	return copyContext(h, latestCompaction(h))
}

// contextParts returns the history to send for a new turn, as contextOf
// does, in two parts: prior, the context's longest first run without a
// directive, a part of h (read only: it has no room to append to), and
// the rest copied into a slice the engine owns, with room for the turn's
// items. On a thread without directives since its latest compaction (the
// usual case: a directive is recorded only to settle, nudge or continue
// a cut answer) nothing is copied.
func contextParts(h []llm.Item) (prior, rest []llm.Item) {
	from := latestCompaction(h)
	d := from
	for d < len(h) && h[d].Origin != llm.OriginDirective {
		d++
	}
	if d == from {
		return nil, copyContext(h, from)
	}
	if d == len(h) {
		return h[from:d:d], make([]llm.Item, 0, turnRoom)
	}
	return h[from:d:d], copyContext(h, d)
}

// latestCompaction returns the index of the latest compaction in h, or 0.
func latestCompaction(h []llm.Item) int {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Origin == OriginCompaction {
			return i
		}
	}
	return 0
}

// copyContext copies h from from on, without directives, with room for a
// short turn's items and a sixteenth of what it copies.
func copyContext(h []llm.Item, from int) []llm.Item {
	n := len(h) - from
	out := make([]llm.Item, 0, n+turnRoom+n/roomShare)
	run := from
	for i := from; i < len(h); i++ {
		if h[i].Origin == llm.OriginDirective {
			out = append(out, h[run:i]...)
			run = i + 1
		}
	}
	return append(out, h[run:]...)
}
