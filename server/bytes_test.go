package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

// bytesScheduler is a scheduler whose threads never run a turn: the tests
// of the queue's bytes need only answers.
func bytesScheduler(t *testing.T) *session.Scheduler {
	t.Helper()
	sched, err := session.New(session.Config{Store: session.NewMemStore(), Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{}, nil, errors.New("no turns in this test")
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sched.Close(context.Background()) })
	return sched
}

// queued returns the bytes and the messages the connection's queue holds.
func queued(c *conn) (n int, msgs [][]byte) {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	for _, m := range c.out.q {
		n += len(m)
	}
	return n, append([][]byte(nil), c.out.q...)
}

// bigIDRequests sends requests whose id is idSize bytes, which every
// answer echoes, until the connection stops reading them (it pushes back)
// or max are sent. It returns how many the connection took.
func bigIDRequests(tr *chanTransport, idSize, max int) int {
	id := strings.Repeat("i", idSize)
	for i := range max {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s-%d","method":"thread/list"}`, id, i)
		select {
		case tr.in <- []byte(msg):
		case <-time.After(2 * time.Second):
			return i // the reader waits for room: the client is pushed back
		}
	}
	return max
}

// TestTheQueueIsBoundedInBytes: a client that sends requests and reads
// nothing, each answer echoing its 1 MiB id, grew the server without bound
// when the queue counted only messages (1024 of them: a gigabyte). The
// queue holds at most QueueBytes; requests past its reserve are answered
// "overloaded, retry"; then the reader stops, pushing back on that client.
func TestTheQueueIsBoundedInBytes(t *testing.T) {
	s, err := New(Config{Sessions: bytesScheduler(t)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &chanTransport{in: make(chan []byte), out: make(chan []byte), done: make(chan struct{})}
	c := s.newConn(tr)
	served := make(chan error, 1)
	go func() { served <- c.serve(context.Background()) }()
	defer func() {
		tr.Close()
		<-served
	}()
	tr.in <- []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)

	const mib = 1 << 20
	taken := bigIDRequests(tr, mib, 48)
	// Let the reader answer what it took.
	var n int
	var msgs [][]byte
	prev := -1
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n, msgs = queued(c); n == prev {
			break
		}
		prev = n
	}
	t.Logf("the connection took %d requests; its queue holds %d messages, %d bytes", taken, len(msgs), n)
	const bound = 16 << 20 // DefaultQueueBytes, written out so the test reads the same on any version
	if n > bound {
		t.Errorf("the queue holds %d bytes (%d messages) for a client that reads nothing, more than its bound of %d", n, len(msgs), bound)
	}
	overloaded := 0
	for _, m := range msgs {
		if bytes.Contains(m, []byte(`"code":-32001`)) {
			overloaded++
		}
	}
	if overloaded == 0 {
		t.Errorf("no request was answered overloaded (-32001) once the queue was full")
	}
}
