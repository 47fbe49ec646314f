package cli

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/store"
)

// traceKeeper collects a turn's events for `rein trace THREAD` and keeps
// them in the store when the turn ends. Streamed deltas are left out: the
// page draws rounds and calls, not each token, and they are most of a
// turn's events.
type traceKeeper struct {
	mu     sync.Mutex
	events []json.RawMessage
	turn   string
}

func (k *traceKeeper) Handle(e event.Event) {
	switch e.Type {
	case event.TextDelta, event.ThinkingDelta, event.CallDelta:
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.turn == "" {
		k.turn = e.TurnID
	}
	k.events = append(k.events, b)
}

// keep writes what was collected; a failure only costs the trace.
func (k *traceKeeper) keep(ctx context.Context, st *store.Store, thread string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if st == nil || len(k.events) == 0 {
		return nil
	}
	err := st.AppendTrace(context.WithoutCancel(ctx), thread, k.turn, k.events)
	k.events = nil
	return err
}
