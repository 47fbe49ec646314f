package server

import (
	"context"
	"encoding/json"
	"github.com/reinhq/rein/protocol"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

// TestNotificationsCountInBytes: a turn streaming large deltas to a client
// that reads nothing fills the queue only up to the bytes left to
// notifications; the rest are dropped and counted, and a request then is
// answered "overloaded, retry" without running.
func TestNotificationsCountInBytes(t *testing.T) {
	model := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: strings.Repeat("x", 512<<10), Chunk: 8 << 10}}})
	gate := make(chan struct{})
	sched, err := session.New(session.Config{Store: session.NewMemStore(), Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: gatedModel{model, gate}}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close(context.Background())
	s, err := New(Config{Sessions: sched, QueueBytes: minQueueBytes, StallTimeout: time.Hour})
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
	type reply struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *protocol.Error `json:"error"`
	}
	id := 0
	call := func(method string, params any) reply {
		t.Helper()
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		tr.in <- b
		for {
			var r reply
			select {
			case m := <-tr.out:
				json.Unmarshal(m, &r)
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to %s", method)
			}
			if r.ID == id {
				return r
			}
		}
	}
	call(protocol.MethodInitialize, protocol.InitializeParams{})
	var th protocol.ThreadResult
	json.Unmarshal(call(protocol.MethodThreadStart, protocol.ThreadStartParams{}).Result, &th)
	var started protocol.TurnStartResult
	json.Unmarshal(call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: []protocol.InputPart{{Type: "text", Text: "talk"}}}).Result, &started)
	close(gate)

	// The client reads nothing now.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if got, err := sched.Wait(ctx, th.Thread.ID, started.Turn.ID); err != nil || got.Status != session.TurnCompleted {
		t.Fatalf("the turn did not complete while the client stopped reading: %v %+v", err, got)
	}
	sub := func() *session.Subscription {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.subs[th.Thread.ID].sub.Load()
	}()
	eventually(t, "the connection has taken every event", func() bool {
		if sub.Pending() > 0 {
			return false
		}
		c.pumping.Lock()
		defer c.pumping.Unlock()
		return true
	})
	n, msgs := queued(c)
	c.out.mu.Lock()
	dropped := c.out.dropped
	c.out.mu.Unlock()
	if limit := minQueueBytes - minQueueBytes/4; n > limit {
		t.Errorf("notifications fill %d bytes of the queue (%d messages), more than the %d left to them", n, len(msgs), limit)
	}
	if dropped == 0 {
		t.Error("no notification was dropped, though the turn streamed 512 KiB to a 64 KiB queue")
	}
	if !c.out.overloaded() {
		t.Error("the queue refused notifications but does not say it is overloaded")
	}
}
