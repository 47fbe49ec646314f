package loop

import (
	"context"
	"strconv"

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
		it.ID = st.TurnID + "." + strconv.Itoa(st.NextItem)
	}
	it.TurnID = st.TurnID
	st.History = append(st.History, it)
	if r.ev != nil {
		r.emit(event.Event{Type: event.ItemAdded, Item: &st.History[len(st.History)-1]})
	}
	if r.o.Journal != nil {
		return r.o.Journal.Record(context.WithoutCancel(r.ctx), st.ThreadID, it)
	}
	return nil
}

// replace swaps the item at index i for it (same id), journaling it.
func (r *run) replace(i int, it llm.Item) error {
	it.ID = r.st.History[i].ID
	it.TurnID = r.st.History[i].TurnID
	r.st.History[i] = it
	if r.guard != nil {
		r.edits = append(r.edits, i)
	}
	if r.ev != nil {
		r.emit(event.Event{Type: event.ItemAdded, Item: &r.st.History[i]})
	}
	if r.o.Journal != nil {
		return r.o.Journal.Record(context.WithoutCancel(r.ctx), r.st.ThreadID, it)
	}
	return nil
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
