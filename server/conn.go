package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
		s: s, t: t, out: newOutbox(s.c.QueueSize, s.c.Reserve), subs: make(map[string]*watched),
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
		c.handle(ctx, data)
	}
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		err = nil
	}

	c.unwatchAll()
	c.out.close()
	flushed := make(chan struct{})
	go func() {
		writer.Wait()
		close(flushed)
	}()
	select {
	case <-flushed:
	case <-time.After(flushTimeout):
		cancel()
		t.Close()
		<-flushed
	}
	t.Close()
	return err
}

// handle answers one message. Requests run one at a time, in order.
func (c *conn) handle(ctx context.Context, data []byte) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return
	}
	if data[0] == '[' {
		c.reply(ctx, nil, nil, &Error{Code: CodeInvalidRequest, Message: "batches are not supported; send one request per message"})
		return
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		c.reply(ctx, nil, nil, &Error{Code: CodeParseError, Message: "the message is not JSON: " + err.Error()})
		return
	}
	if len(m.ID) == 0 || string(m.ID) == "null" {
		// A notification (such as "initialized"): nothing to answer.
		return
	}
	if m.Method == "" {
		c.reply(ctx, m.ID, nil, &Error{Code: CodeInvalidRequest, Message: "the request has no method"})
		return
	}
	h, ok := methods[m.Method]
	if !ok {
		c.reply(ctx, m.ID, nil, &Error{Code: CodeMethodNotFound, Message: "no method " + m.Method})
		return
	}
	if c.out.overloaded() {
		c.reply(ctx, m.ID, nil, errOverloaded)
		return
	}
	c.mu.Lock()
	ready := c.initialized
	c.mu.Unlock()
	if !ready && m.Method != MethodInitialize {
		c.reply(ctx, m.ID, nil, &Error{Code: CodeNotInitialized, Message: "not initialized: call initialize first", Data: &ErrorData{Kind: "notInitialized"}})
		return
	}
	res, err := h(c, ctx, m.Params)
	if err != nil {
		c.reply(ctx, m.ID, nil, toError(err))
		return
	}
	c.reply(ctx, m.ID, res, nil)
}

func (c *conn) reply(ctx context.Context, id json.RawMessage, res any, e *Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	if e == nil && res == nil {
		res = EmptyResult{}
	}
	_ = c.out.respond(ctx, response{JSONRPC: "2.0", ID: id, Result: res, Error: e})
}

// watched is a thread the connection watches: its subscription and the
// notifier that turns its events into notifications, which only the pump
// uses.
type watched struct {
	sub atomic.Pointer[session.Subscription] // set once subscribed
	n   *notifier
}

// watch subscribes the connection to a thread's notifications, once.
func (c *conn) watch(ctx context.Context, threadID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.subs[threadID]; ok {
		return nil
	}
	w := &watched{n: newNotifier(c.out.notify)}
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
