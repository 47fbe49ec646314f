package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/protocol"
	"sync"
	"time"
)

// minQueueBytes is the least Config.QueueBytes: room for answers and a
// few notifications.
const minQueueBytes = 64 << 10

// errStalled is returned when a client has not read for the stall timeout
// while its queue was full: the connection is closed.
var errStalled = errors.New("server: the client stopped reading while its queue was full")

// outbox is a connection's bounded queue of outgoing messages, emptied by
// the connection's writer. It is bounded in messages and in bytes, and
// never grows past either:
//
//   - a notification is dropped (and counted) when the queue is filled up to
//     its reserve (in messages or bytes; one larger than that goes alone
//     into an empty queue); the client is told how many it lost by a
//     warning notification once there is room again;
//   - a request that arrives while the queue is filled up to its reserve,
//     or has refused a notification since the client last read, is
//     answered "overloaded, retry" (CodeOverloaded) from the reserve,
//     without running;
//   - a response waits for room when it does not fit, which stops the
//     connection's reader and so pushes back on that client alone; one
//     larger than the whole byte bound waits until the queue is empty and
//     goes alone;
//   - a client that reads nothing for the stall timeout while a response
//     waits or notifications are dropped has stopped reading past the
//     bound: the box stalls (stalled is closed) and the connection ends.
//
// Turns publish to it without ever blocking.
type outbox struct {
	mu      sync.Mutex
	q       [][]byte
	size    int
	reserve int
	// bytes is the size of what q holds; maxBytes bounds it, reserveBytes
	// of it kept for responses.
	bytes, maxBytes, reserveBytes int
	// stallAfter is how long the queue may stay full without the writer
	// taking a message; progress is when it last took one, or when the
	// queue last became non-empty.
	stallAfter time.Duration
	progress   time.Time
	stalled    chan struct{} // closed once the client stalled
	// refused is set when a notification was dropped, until the writer
	// takes a message: the queue is full for the notifications it gets,
	// whatever their size.
	refused bool
	gap     int64 // notifications dropped since the last warning
	dropped int64 // notifications dropped in all
	closed  bool
	wake    chan struct{} // the writer: a message is queued or the box closed
	room    chan struct{} // blocked responders: the writer took a message
}

func newOutbox(size, reserve, maxBytes int, stallAfter time.Duration) *outbox {
	return &outbox{
		size: size, reserve: reserve, maxBytes: maxBytes, reserveBytes: maxBytes / 4, stallAfter: stallAfter,
		stalled: make(chan struct{}), wake: make(chan struct{}, 1), room: make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// overloaded reports whether the queue is filled up to its reserve: there
// is no room left for a notification and the warning that may have to
// precede it, its bytes have reached the reserve's, or it refused a
// notification since the client last read.
func (o *outbox) overloaded() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size-o.reserve-len(o.q) < 2 || o.bytes >= o.maxBytes-o.reserveBytes || (o.refused && len(o.q) > 0)
}

// push appends msg; o.mu is held.
func (o *outbox) push(msg []byte, now time.Time) {
	if len(o.q) == 0 {
		o.progress = now
	}
	o.q = append(o.q, msg)
	o.bytes += len(msg)
}

// checkStall stalls the box when the queue has been full with no progress
// for the stall timeout; o.mu is held. It reports whether the box is
// stalled.
func (o *outbox) checkStall(now time.Time) bool {
	select {
	case <-o.stalled:
		return true
	default:
	}
	if now.Sub(o.progress) < o.stallAfter {
		return false
	}
	close(o.stalled)
	return true
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
	now := time.Now()
	var warning []byte
	if o.gap > 0 {
		warning, _ = json.Marshal(notification{JSONRPC: "2.0", Method: protocol.NotifyWarning, Params: protocol.Warning{
			Code: protocol.WarnNotificationsDropped, Dropped: o.gap,
			Message: fmt.Sprintf("%d notifications were dropped because the client read too slowly; read the thread (thread/read) to catch up", o.gap),
		}})
	}
	need, needBytes := 1, len(msg)+len(warning)
	if warning != nil {
		need = 2
	}
	// One larger than the bytes left to notifications goes alone, as a
	// response does: a reading client must get it.
	tooBig := o.maxBytes-o.reserveBytes-o.bytes < needBytes && len(o.q) > 0
	if o.size-o.reserve-len(o.q) < need || tooBig {
		o.gap++
		o.dropped++
		o.refused = true
		if len(o.q) > 0 {
			o.checkStall(now)
		}
		return
	}
	if warning != nil {
		o.push(warning, now)
		o.gap = 0
	}
	o.push(msg, now)
	signal(o.wake)
}

// fits reports whether msg may be queued now; o.mu is held. A message
// larger than the whole byte bound goes once the queue is empty.
func (o *outbox) fits(msg []byte) bool {
	if len(o.q) >= o.size {
		return false
	}
	return o.bytes+len(msg) <= o.maxBytes || len(o.q) == 0
}

// respond queues a response, waiting while it does not fit. It returns
// errStalled when the client has not read for the stall timeout meanwhile.
func (o *outbox) respond(ctx context.Context, r response) error {
	msg, err := json.Marshal(r)
	if err != nil {
		r.Result, r.Error = nil, &protocol.Error{Code: protocol.CodeInternal, Message: "the result does not encode: " + err.Error()}
		msg, _ = json.Marshal(r)
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return errClosed
		}
		now := time.Now()
		if o.fits(msg) {
			o.push(msg, now)
			o.mu.Unlock()
			signal(o.wake)
			return nil
		}
		if o.checkStall(now) {
			o.mu.Unlock()
			return errStalled
		}
		wait := o.stallAfter - now.Sub(o.progress)
		o.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-o.room:
		case <-timer.C:
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
			o.bytes -= len(msg)
			o.progress = time.Now()
			o.refused = false
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
