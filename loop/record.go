package loop

import (
	"context"
	"strconv"
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// record appends an item to the history, gives it an id, journals it and
// announces it. Journal writes outlive an interrupt: what was produced is
// kept.
func (r *run) record(it llm.Item) error {
	st := r.st
	if it.ID == "" {
		st.NextItem++
		it.ID = r.ids.id(st.TurnID, st.NextItem)
	}
	it.TurnID = st.TurnID
	st.History = append(st.History, it)
	if r.ev != nil {
		r.emit(event.Event{Type: event.ItemAdded, Item: &st.History[len(st.History)-1]})
	}
	if r.o.Journal != nil {
		return r.o.Journal.Record(r.journalCtx(), st.ThreadID, it)
	}
	return nil
}

// replace swaps the item at index i of History (an item of the turn, so
// never one of prior) for it (same id), journaling it.
func (r *run) replace(i int, it llm.Item) error {
	it.ID = r.st.History[i].ID
	it.TurnID = r.st.History[i].TurnID
	r.st.History[i] = it
	if r.guard != nil {
		// The guard counts the whole context.
		r.edits = append(r.edits, len(r.st.prior)+i)
	}
	if r.ev != nil {
		r.emit(event.Event{Type: event.ItemAdded, Item: &r.st.History[i]})
	}
	if r.o.Journal != nil {
		return r.o.Journal.Record(r.journalCtx(), r.st.ThreadID, it)
	}
	return nil
}

// journalCtx is the context of the run's journal writes: r.ctx without
// its cancellation, made once a run (each is an allocation, and a turn
// writes an item per step).
func (r *run) journalCtx() context.Context {
	if r.jctx == nil {
		r.jctx = context.WithoutCancel(r.ctx)
	}
	return r.jctx
}

func (r *run) emit(e event.Event) {
	if r.ev == nil {
		return
	}
	e.Time = r.o.Now()
	e.ThreadID = r.st.ThreadID
	e.TurnID = r.st.TurnID
	r.ev.Handle(e)
}

func (r *run) warn(code, msg string) {
	r.emit(event.Event{Type: event.Warning, Code: code, Content: msg, Round: r.st.Rounds})
}

func (r *run) redact(s string) string {
	if r.o.Redact == nil {
		return s
	}
	return r.o.Redact(s)
}

// drainSteer appends input steered into the running turn.
func (r *run) drainSteer() error {
	_, err := r.steer()
	return err
}

func (r *run) steer() (bool, error) {
	if r.o.Steer == nil {
		return false, nil
	}
	items := r.o.Steer.Drain()
	for _, it := range items {
		it.Role = llm.RoleUser
		if it.Origin == llm.OriginInput {
			it.Origin = llm.OriginSteer
		}
		if err := r.record(it); err != nil {
			return true, err
		}
	}
	return len(items) > 0, nil
}

// itemIDs makes the ids of a turn's items, "<turn id>.<n>", cutting them
// from blocks made for several items at once: a round records two items
// or more, and one allocation a block costs less than one an item. The
// ids of a block keep it alive; they live as long as the turn's items.
type itemIDs struct {
	block string // the ids of items from, from+1, …, back to back
	from  int
	// ends[i]: where the id of item from+i ends in block (a block is at
	// most maxIDBlock ids of a turn id up to maxIDBlockTurn bytes, or one
	// id: int32 keeps the run, which holds it, a size class smaller).
	ends [maxIDBlock]int32
	n    int // ids in block
	made int // blocks made
}

// firstIDBlock ids make a turn's first block (a short turn records few
// items), maxIDBlock each later one.
const (
	firstIDBlock = 4
	maxIDBlock   = 16
	// maxIDBlockTurn: a longer turn id (the caller's) gets blocks of one,
	// so that no block holds many copies of it for nothing.
	maxIDBlockTurn = 128
)

// id returns the id of the turn's item n.
func (b *itemIDs) id(turn string, n int) string {
	if i := n - b.from; i >= 0 && i < b.n {
		start := int32(0)
		if i > 0 {
			start = b.ends[i-1]
		}
		return b.block[start:b.ends[i]]
	}
	size := maxIDBlock
	switch {
	case len(turn) > maxIDBlockTurn:
		size = 1
	case b.made == 0:
		size = firstIDBlock
	}
	b.made++
	var num [20]byte
	last := len(strconv.AppendInt(num[:0], int64(n+size-1), 10))
	var sb strings.Builder
	sb.Grow(size * (len(turn) + 1 + last))
	for i := range size {
		sb.WriteString(turn)
		sb.WriteByte('.')
		sb.Write(strconv.AppendInt(num[:0], int64(n+i), 10))
		b.ends[i] = int32(sb.Len())
	}
	b.block, b.from, b.n = sb.String(), n, size
	return b.block[:b.ends[0]]
}
