package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// reasonTransport is a chanTransport that records why it was closed.
type reasonTransport struct {
	*chanTransport
	reason chan string
}

func (r *reasonTransport) CloseWithReason(reason string) error {
	r.reason <- reason
	return r.Close()
}

// TestAClientThatStopsReadingIsDisconnected: a client that reads nothing
// while an answer waits for room is told why, as far as it can be, and
// disconnected after the stall timeout; another connection of the same
// server is served meanwhile.
func TestAClientThatStopsReadingIsDisconnected(t *testing.T) {
	s, err := New(Config{Sessions: bytesScheduler(t), QueueBytes: minQueueBytes, StallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tr := &reasonTransport{&chanTransport{in: make(chan []byte), out: make(chan []byte), done: make(chan struct{})}, make(chan string, 1)}
	c := s.newConn(tr)
	served := make(chan error, 1)
	go func() { served <- c.serve(context.Background()) }()
	sent := make(chan int, 1)
	go func() { sent <- bigIDRequests(tr.chanTransport, 8<<10, 1000) }()
	eventually(t, "the queue is full", func() bool {
		n, _ := queued(c)
		return n > minQueueBytes/2
	})

	// Another client of the same server reads and is answered.
	other := &chanTransport{in: make(chan []byte), out: make(chan []byte, 16), done: make(chan struct{})}
	otherDone := make(chan error, 1)
	go func() { otherDone <- s.newConn(other).serve(context.Background()) }()
	other.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	other.in <- []byte(`{"jsonrpc":"2.0","id":2,"method":"thread/list"}`)
	for _, want := range []string{`"id":1,"result"`, `"id":2,"result"`} {
		select {
		case m := <-other.out:
			if !strings.Contains(string(m), want) {
				t.Errorf("the other client got %s, want %s", m, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the other client was not answered while one stopped reading")
		}
	}
	other.Close()
	<-otherDone

	select {
	case err := <-served:
		if !errors.Is(err, errStalled) {
			t.Errorf("serve = %v, want the client disconnected as stalled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a client that read nothing was not disconnected")
	}
	select {
	case r := <-tr.reason:
		if !strings.Contains(r, "overloaded") || len(r) > 123 {
			t.Errorf("close reason %q, want one saying overloaded in at most 123 bytes", r)
		}
	default:
		t.Error("the client was not told why it was disconnected")
	}
	<-sent
}
