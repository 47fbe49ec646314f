package server

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/reinhq/rein/protocol"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

// chanTransport is a connection whose client reads only when the test
// takes from out.
type chanTransport struct {
	in   chan []byte
	out  chan []byte
	done chan struct{}
}

func (c *chanTransport) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *chanTransport) Write(ctx context.Context, m []byte) error {
	select {
	case c.out <- m:
		return nil
	case <-c.done:
		return errors.New("closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *chanTransport) Close() error {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return nil
}

// eventually polls cond for up to 20 s: a deadline for a loaded CI
// machine, not a measurement.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

func TestOverloadedWhenTheClientStopsReading(t *testing.T) {
	model := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: strings.Repeat("x", 500), Chunk: 1}, {Text: "short"}}})
	// The model streams only once the client has read turn/start's answer:
	// every delta is then published while the client reads nothing, however
	// loaded the machine is.
	gate := make(chan struct{})
	sched, err := session.New(session.Config{Store: session.NewMemStore(), Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: gatedModel{model, gate}}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close(context.Background())
	s, err := New(Config{Sessions: sched, QueueSize: 64, Reserve: 8})
	if err != nil {
		t.Fatal(err)
	}
	tr := &chanTransport{in: make(chan []byte), out: make(chan []byte), done: make(chan struct{})}
	c := s.newConn(tr)
	served := make(chan error, 1)
	go func() { served <- c.serve(context.Background()) }()
	defer func() {
		tr.Close()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()

	id := 0
	send := func(method string, params any) int {
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		tr.in <- b
		return id
	}
	type reply struct {
		ID     int             `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *protocol.Error `json:"error"`
	}
	// await reads until the response to id and returns it with the number
	// of messages read before it.
	await := func(id int) (reply, int) {
		for n := 0; ; n++ {
			var r reply
			select {
			case b := <-tr.out:
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no response to %d", id)
			}
			if r.Method == "" && r.ID == id {
				return r, n
			}
		}
	}
	call := func(method string, params, out any) {
		t.Helper()
		r, _ := await(send(method, params))
		if r.Error != nil {
			t.Fatalf("%s: %v", method, r.Error)
		}
		if out != nil {
			json.Unmarshal(r.Result, out)
		}
	}

	call(protocol.MethodInitialize, protocol.InitializeParams{}, nil)
	var th protocol.ThreadResult
	call(protocol.MethodThreadStart, protocol.ThreadStartParams{}, &th)
	var started protocol.TurnStartResult
	call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: []protocol.InputPart{{Type: "text", Text: "talk"}}}, &started)
	close(gate)

	// The client reads nothing now; the turn goes on regardless.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
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
		c.pumping.Lock() // until the events taken are notified
		defer c.pumping.Unlock()
		return c.out.overloaded()
	})

	qlen := func() int {
		c.out.mu.Lock()
		defer c.out.mu.Unlock()
		return len(c.out.q)
	}
	full := qlen()
	req := send(protocol.MethodThreadList, nil)
	// Read only once the answer is queued: reading makes room.
	eventually(t, "the answer is queued", func() bool { return qlen() > full })
	r, before := await(req)
	if r.Error == nil || r.Error.Code != protocol.CodeOverloaded || r.Error.Message != "overloaded, retry" {
		t.Fatalf("a request to an overloaded connection got %+v, %s", r.Error, r.Result)
	}
	// The queue did not grow: at most its size came before the answer (one
	// of them held by the writer).
	if before > 64 {
		t.Errorf("%d messages came before the answer, more than the queue's 64", before)
	}

	// Once the client has read, requests run again and the next
	// notification comes after a warning saying how many were dropped.
	eventually(t, "the queue is empty", func() bool {
		select {
		case <-tr.out:
		default:
		}
		return qlen() == 0
	})
	call(protocol.MethodThreadList, nil, nil)
	send(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: []protocol.InputPart{{Type: "text", Text: "again"}}})
	for {
		var r reply
		json.Unmarshal(<-tr.out, &r)
		if r.Method == protocol.NotifyWarning {
			var w protocol.Warning
			json.Unmarshal(r.Params, &w)
			if w.Code != protocol.WarnNotificationsDropped || w.Dropped < 400 {
				t.Errorf("warning %+v, want notifications_dropped with the count", w)
			}
			break
		}
		if r.Method != "" {
			t.Fatalf("%s before the warning of the dropped notifications", r.Method)
		}
	}
}

// gatedModel holds every stream until gate is closed.
type gatedModel struct {
	llm.Model
	gate <-chan struct{}
}

func (m gatedModel) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	select {
	case <-m.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.Model.Stream(ctx, req)
}
