package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/trace"
)

// TraceReader reads the events kept for a thread's turns (the runtime
// keeps them through session.Config.Traces). *store.Store is one.
type TraceReader interface {
	// Trace returns the events kept for thread's turns, oldest first.
	Trace(ctx context.Context, thread string) ([]json.RawMessage, error)
}

// turnTrace answers turn/trace: the turn's trace page, rebuilt from the
// events the runtime kept when the turn (or each of its runs, for a paused
// turn) ended.
func (c *conn) turnTrace(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.TurnTraceParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID, "turnId", p.TurnID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	tr := c.s.c.Traces
	if tr == nil {
		return nil, invalidParams("this server keeps no traces")
	}
	raws, err := tr.Trace(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	var evs []event.Event
	for _, r := range raws {
		var e event.Event
		if json.Unmarshal(r, &e) != nil || e.TurnID != p.TurnID {
			continue
		}
		evs = append(evs, e)
	}
	for _, t := range trace.Turns(evs) {
		if t.ID != p.TurnID {
			continue
		}
		var b bytes.Buffer
		if err := trace.WriteHTML(&b, t); err != nil {
			return nil, fmt.Errorf("server: trace of turn %s: %w", p.TurnID, err)
		}
		return protocol.TurnTraceResult{HTML: b.String()}, nil
	}
	return nil, invalidParams("turn %s of thread %s has no trace yet: a trace is kept when the turn ends or pauses", p.TurnID, p.ThreadID)
}
