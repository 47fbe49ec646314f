package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// outbox is a connection's bounded queue of outgoing messages, emptied by
// the connection's writer. It never grows past its size:
//
//   - a notification is dropped (and counted) when the queue is filled up to
//     its reserve; the client is told how many it lost by a warning
//     notification once there is room again;
//   - a request that arrives while notifications fill the queue is answered
//     "overloaded, retry" (CodeOverloaded) from the reserve, without running;
//   - a response waits for room only when even the reserve is full, which
//     stops the connection's reader and so pushes back on that client alone.
//
// Turns publish to it without ever blocking.
type outbox struct {
	mu      sync.Mutex
	q       [][]byte
	size    int
	reserve int
	gap     int64 // notifications dropped since the last warning
	dropped int64 // notifications dropped in all
	closed  bool
	wake    chan struct{} // the writer: a message is queued or the box closed
	room    chan struct{} // blocked responders: the writer took a message
}

func newOutbox(size, reserve int) *outbox {
	return &outbox{size: size, reserve: reserve, wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// overloaded reports whether notifications fill the queue up to its
// reserve: there is no room left for a notification and the warning that
// may have to precede it.
func (o *outbox) overloaded() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size-o.reserve-len(o.q) < 2
}

// notify queues a notification unless the queue is full up to its reserve.
func (o *outbox) notify(method string, params any) {
	msg, err := json.Marshal(notification{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	free := o.size - o.reserve - len(o.q)
	need := 1
	if o.gap > 0 {
		need = 2
	}
	if free < need {
		o.gap++
		o.dropped++
		return
	}
	if o.gap > 0 {
		w, _ := json.Marshal(notification{JSONRPC: "2.0", Method: NotifyWarning, Params: Warning{
			Code: WarnNotificationsDropped, Dropped: o.gap,
			Message: fmt.Sprintf("%d notifications were dropped because the client read too slowly; read the thread (thread/read) to catch up", o.gap),
		}})
		o.q = append(o.q, w)
		o.gap = 0
	}
	o.q = append(o.q, msg)
	signal(o.wake)
}

// respond queues a response, waiting while the whole queue is full.
func (o *outbox) respond(ctx context.Context, r response) error {
	msg, err := json.Marshal(r)
	if err != nil {
		r.Result, r.Error = nil, &Error{Code: CodeInternal, Message: "the result does not encode: " + err.Error()}
		msg, _ = json.Marshal(r)
	}
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return errClosed
		}
		if len(o.q) < o.size {
			o.q = append(o.q, msg)
			o.mu.Unlock()
			signal(o.wake)
			return nil
		}
		o.mu.Unlock()
		select {
		case <-o.room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// next returns the next message to write; ok is false once the box is
// closed and empty.
func (o *outbox) next(ctx context.Context) (msg []byte, ok bool) {
	for {
		o.mu.Lock()
		if len(o.q) > 0 {
			msg = o.q[0]
			o.q[0] = nil
			o.q = o.q[1:]
			o.mu.Unlock()
			signal(o.room)
			return msg, true
		}
		closed := o.closed
		o.mu.Unlock()
		if closed {
			return nil, false
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// close stops new messages; what is queued is still written.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	signal(o.wake)
	signal(o.room)
}
