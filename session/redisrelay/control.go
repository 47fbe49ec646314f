package redisrelay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/session"
)

var _ session.Control = (*Relay)(nil)

// maxNotice bounds a control message read from Redis: a notice is two ids.
const maxNotice = 1 << 10

// notice is a control message on the wire, with the node that sent it.
type notice struct {
	Node   string         `json:"node"`
	Notice session.Notice `json:"notice"`
}

// controlChannel is where the notices for a thread's running turn go.
func (r *Relay) controlChannel(threadID string) string { return r.prefix + "ctl:" + threadID }

// Notify implements session.Control: the notice is published at once (one
// round trip); every node receives it and the one running the turn acts on
// it. A notice that fails to publish costs latency only: that node reads
// the store at the turn's next round boundary.
func (r *Relay) Notify(ctx context.Context, n session.Notice) error {
	if n.ThreadID == "" || n.TurnID == "" {
		return fmt.Errorf("redisrelay: a notice names a thread and a turn")
	}
	b, err := json.Marshal(notice{Node: r.node, Notice: n})
	if err != nil {
		return fmt.Errorf("redisrelay: notice: %w", err)
	}
	if err := r.c.Publish(ctx, r.controlChannel(n.ThreadID), b).Err(); err != nil {
		return fmt.Errorf("redisrelay: notice for thread %s: %w", n.ThreadID, err)
	}
	return nil
}

// RunControl receives the other nodes' notices and hands each to deliver
// (a scheduler's Notice) until ctx ends. ready, when not nil, is closed
// once the subscription is in place.
func (r *Relay) RunControl(ctx context.Context, deliver func(session.Notice), ready chan<- struct{}) error {
	sub := r.c.PSubscribe(ctx, r.prefix+"ctl:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return fmt.Errorf("redisrelay: subscribe to control: %w", err)
	}
	if ready != nil {
		close(ready)
	}
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			if len(m.Payload) > maxNotice {
				continue
			}
			var n notice
			if err := json.Unmarshal([]byte(m.Payload), &n); err != nil || n.Node == r.node {
				continue
			}
			// The channel names the thread; a notice claiming another is
			// not believed.
			if n.Notice.ThreadID != strings.TrimPrefix(m.Channel, r.prefix+"ctl:") || n.Notice.TurnID == "" {
				continue
			}
			deliver(n.Notice)
		}
	}
}
