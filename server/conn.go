package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/protocol"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/session"
)

// flushTimeout bounds how long a closing connection waits for its queued
// messages to be written.
const flushTimeout = 2 * time.Second

// ServeConn serves one connection until the client goes away or ctx ends.
// It returns nil when the client closed the connection.
func (s *Server) ServeConn(ctx context.Context, t Transport) error {
	return s.newConn(t).serve(ctx)
}

func (s *Server) newConn(t Transport) *conn {
	return &conn{
		s: s, t: t, out: newOutbox(s.c.QueueSize, s.c.Reserve, s.c.QueueBytes, s.c.StallTimeout), subs: make(map[string]*watched),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), pumped: make(chan struct{}),
	}
}

func (c *conn) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := c.t

	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for {
			msg, ok := c.out.next(ctx)
			if !ok {
				return
			}
			if err := t.Write(ctx, msg); err != nil {
				cancel()
				return
			}
		}
	}()
	go func() {
		defer close(c.pumped)
		c.pump(c.stop)
	}()
	// A client that stopped reading past the queue's bound is told why,
	// if it still can be, and disconnected; this goroutine ends with the
	// connection's context either way.
	var watcher sync.WaitGroup
	watcher.Add(1)
	go func() {
		defer watcher.Done()
		select {
		case <-c.out.stalled:
			closeStalled(t, c.s.c.QueueBytes, c.s.c.StallTimeout)
			cancel()
		case <-ctx.Done():
		}
	}()
	// A transport whose Read ignores ctx (a pipe, stdin) is unblocked by
	// closing it.
	stop := context.AfterFunc(ctx, func() { t.Close() })
	defer stop()

	var err error
	for {
		var data []byte
		data, err = t.Read(ctx)
		if err != nil {
			break
		}
		if err = c.handle(ctx, data); err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		err = nil
	}
	stalled := false
	select {
	case <-c.out.stalled:
		stalled = true
		err = fmt.Errorf("%w (queue bound %d bytes, %v without reading); disconnected it", errStalled, c.s.c.QueueBytes, c.s.c.StallTimeout)
	default:
	}

	c.unwatchAll()
	c.out.close()
	flushed := make(chan struct{})
	go func() {
		writer.Wait()
		close(flushed)
	}()
	wait := flushTimeout
	if stalled {
		wait = 0 // the client reads nothing: there is nothing to flush to
	}
	select {
	case <-flushed:
	case <-time.After(wait):
		cancel()
		t.Close()
		<-flushed
	}
	cancel()
	watcher.Wait()
	t.Close()
	return err
}

// reasonCloser is a transport that can tell the client why it is closed
// (a WebSocket close frame).
type reasonCloser interface {
	CloseWithReason(reason string) error
}

// closeStalled tells a client that stopped reading why it is disconnected,
// when its transport can (the message may not get through: the client
// reads nothing), and closes the transport.
func closeStalled(t Transport, bound int, after time.Duration) {
	if rc, ok := t.(reasonCloser); ok {
		// A close frame's reason holds at most 123 bytes.
		rc.CloseWithReason(fmt.Sprintf("overloaded: nothing read for %v with the %d-byte queue full; reconnect", after, bound))
		return
	}
	t.Close()
}

// handle answers one message. Requests run one at a time, in order. It
// returns an error only when the connection must end: the client stopped
// reading (errStalled) or the connection closed.
func (c *conn) handle(ctx context.Context, data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if data[0] == '[' {
		return c.reply(ctx, nil, nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "batches are not supported; send one request per message"})
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return c.reply(ctx, nil, nil, &protocol.Error{Code: protocol.CodeParseError, Message: "the message is not JSON: " + err.Error()})
	}
	if len(m.ID) == 0 || string(m.ID) == "null" {
		// A notification (such as "initialized"): nothing to answer.
		return nil
	}
	if m.Method == "" {
		return c.reply(ctx, m.ID, nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "the request has no method"})
	}
	h, ok := methods[m.Method]
	if !ok {
		return c.reply(ctx, m.ID, nil, &protocol.Error{Code: protocol.CodeMethodNotFound, Message: fmt.Sprintf("no method %q", clip(m.Method))})
	}
	if c.out.overloaded() {
		return c.reply(ctx, m.ID, nil, errOverloaded)
	}
	c.mu.Lock()
	ready := c.initialized
	c.mu.Unlock()
	if !ready && m.Method != protocol.MethodInitialize {
		return c.reply(ctx, m.ID, nil, &protocol.Error{Code: protocol.CodeNotInitialized, Message: "not initialized: call initialize first", Data: &protocol.ErrorData{Kind: "notInitialized"}})
	}
	res, err := h(c, ctx, m.Params)
	if err != nil {
		return c.reply(ctx, m.ID, nil, toError(err))
	}
	return c.reply(ctx, m.ID, res, nil)
}

// reply queues the answer to a request; an error ends the connection.
func (c *conn) reply(ctx context.Context, id json.RawMessage, res any, e *protocol.Error) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	if e == nil && res == nil {
		res = protocol.EmptyResult{}
	}
	return c.out.respond(ctx, response{JSONRPC: "2.0", ID: id, Result: res, Error: e})
}

// watched is a thread the connection watches: its subscription and the
// notifier that turns its events into notifications, which only the pump
// uses.
type watched struct {
	sub atomic.Pointer[session.Subscription] // set once subscribed
	n   *notifier
	// gone is set by thread/unsubscribe: the pump drops what the
	// subscription still holds.
	gone atomic.Bool
}

// watch subscribes the connection to a thread's notifications, once.
func (c *conn) watch(ctx context.Context, threadID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.subs[threadID]; ok {
		return nil
	}
	if len(c.subs) >= c.s.c.MaxWatched {
		return watchBound(len(c.subs))
	}
	w := &watched{n: newNotifier(c.out.notify)}
	w.n.onContext = c.s.contexts.put
	sub, err := c.s.c.Sessions.SubscribeFunc(ctx, threadID, func() { c.ready(w) })
	if err != nil {
		return err
	}
	c.subs[threadID] = w
	w.sub.Store(sub)
	// Events queued before w.sub was set were announced to a pump that
	// could not take them yet.
	c.ready(w)
	return nil
}

// ready queues w for the pump. It is called while a turn publishes, so it
// only appends and signals.
func (c *conn) ready(w *watched) {
	c.readyMu.Lock()
	c.readyQ = append(c.readyQ, w)
	c.readyMu.Unlock()
	signal(c.wake)
}

// pump turns the events of every watched thread into notifications, in
// order per thread. One goroutine per connection, however many threads it
// watches: an idle thread costs no goroutine. It returns when stop is
// closed, after taking what is queued then.
func (c *conn) pump(stop <-chan struct{}) {
	for {
		c.readyMu.Lock()
		q := c.readyQ
		c.readyQ = nil
		c.readyMu.Unlock()
		c.pumping.Lock()
		for _, w := range q {
			sub := w.sub.Load()
			if sub == nil {
				continue // not subscribed yet: watch queues it again
			}
			if w.gone.Load() {
				continue // unsubscribed: nothing more of it is sent
			}
			evs, _ := sub.Poll()
			for _, e := range evs {
				w.n.handle(e)
			}
		}
		c.pumping.Unlock()
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-stop:
			c.readyMu.Lock()
			n := len(c.readyQ)
			c.readyMu.Unlock()
			if n == 0 {
				return
			}
		}
	}
}

// unwatchAll ends every subscription and waits for the pump to deliver what
// they had queued.
func (c *conn) unwatchAll() {
	c.mu.Lock()
	for id, w := range c.subs {
		w.sub.Load().Close()
		delete(c.subs, id)
	}
	c.mu.Unlock()
	close(c.stop)
	<-c.pumped
}
