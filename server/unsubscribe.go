package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/protocol"
)

// DefaultMaxWatched bounds how many threads one connection watches at once.
// Each watched thread stays in the node's memory (it has a subscriber), so
// without a bound one connection resuming every stored thread would hold
// them all; 16,384 is above what a client needs on one connection (the
// serve benchmark creates 10,000 threads on one) and far below a node's
// memory.
const DefaultMaxWatched = 16384

// threadUnsubscribe ends the connection's subscription to a thread. No
// notification of the thread follows the reply. A thread the connection
// does not watch is no error: the call is idempotent, and it says nothing
// of whether the thread exists.
func (c *conn) threadUnsubscribe(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ThreadUnsubscribeParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID); err != nil {
		return nil, err
	}
	c.unwatch(p.ThreadID)
	return protocol.EmptyResult{}, nil
}

// unwatch ends the subscription to threadID, if any, and waits for the pump
// to finish what it was turning into notifications, so that the reply to
// the client comes after every notification of the thread it will get.
func (c *conn) unwatch(threadID string) {
	c.mu.Lock()
	w, ok := c.subs[threadID]
	delete(c.subs, threadID)
	c.mu.Unlock()
	if !ok {
		return
	}
	w.gone.Store(true)
	if sub := w.sub.Load(); sub != nil {
		sub.Close()
	}
	// The pump may hold events it took from the subscription before it was
	// closed: wait for them to be queued.
	c.pumping.Lock()
	//lint:ignore SA2001 the lock is taken only to wait for the pump's round.
	c.pumping.Unlock()
}

// roomToWatch reports whether the connection may watch one more thread.
func (c *conn) roomToWatch() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.subs); n >= c.s.c.MaxWatched {
		return watchBound(n)
	}
	return nil
}

// watchBound is the error of a watch past the connection's bound.
func watchBound(n int) error {
	return &protocol.Error{
		Code:    protocol.CodeInvalidRequest,
		Message: fmt.Sprintf("this connection watches %d threads, the most it may: call thread/unsubscribe for threads it no longer shows, or open another connection", n),
		Data:    &protocol.ErrorData{Kind: "tooManyWatched"},
	}
}
