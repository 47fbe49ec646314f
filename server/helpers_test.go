package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/protocol"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/window"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeTool is a configurable tool.
type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	return f.run(ctx, c)
}

// backend is a scheduler whose threads play scripted models named by the
// thread's model ("script:NAME"): the factory of the tests.
type backend struct {
	sched *session.Scheduler
	tools []tool.Tool

	mu      sync.Mutex
	scripts map[string]*scripted.Model
}

func newBackend(t *testing.T, tools ...tool.Tool) *backend {
	t.Helper()
	b := &backend{tools: tools, scripts: make(map[string]*scripted.Model)}
	s, err := session.New(session.Config{Store: session.NewMemStore(), Setup: b.setup})
	if err != nil {
		t.Fatal(err)
	}
	b.sched = s
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		for name, m := range b.scripts {
			if err := m.Verify(); err != nil {
				t.Errorf("script %s: %v", name, err)
			}
		}
	})
	return b
}

func (b *backend) script(name string, s scripted.Script) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scripts["script:"+name] = scripted.New(s)
}

func (b *backend) setup(_ context.Context, th session.Thread) (loop.Options, func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.scripts[th.Settings.Model]
	if !ok {
		return loop.Options{}, nil, fmt.Errorf("no script %q", th.Settings.Model)
	}
	o := loop.Options{Model: m, Tools: tool.NewSet(b.tools...), Grace: 100 * time.Millisecond}
	if strings.HasPrefix(th.Settings.Model, "script:compact") {
		w, err := window.New(window.Config{Model: "gpt-4o", Window: 100_000, MaxOutput: 1_000})
		if err != nil {
			return loop.Options{}, nil, err
		}
		o.Window = w
	}
	return o, nil, nil
}

func (b *backend) server(t *testing.T, c server.Config) *server.Server {
	t.Helper()
	c.Sessions = b.sched
	c.CheckThread = func(tc session.ThreadConfig) error {
		if !strings.HasPrefix(tc.Model, "script:") {
			return fmt.Errorf("model %q: the tests only know scripted models", tc.Model)
		}
		return nil
	}
	s, err := server.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// msg is any message the server sends.
type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *protocol.Error `json:"error"`
}

// wire is one client connection's raw messages.
type wire interface {
	send(data []byte) error
	recv() ([]byte, error)
	close()
}

// client is a scripted JSON-RPC client: it reads only when asked to, so a
// test can stop reading.
type client struct {
	t      *testing.T
	w      wire
	nextID int
	// seen are the notifications read so far, in order.
	seen []msg
	// pending are messages read while looking for something else.
	pending []msg
}

func (c *client) read() msg {
	c.t.Helper()
	if len(c.pending) > 0 {
		m := c.pending[0]
		c.pending = c.pending[1:]
		return m
	}
	data, err := c.w.recv()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m msg
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("the server sent %q: %v", data, err)
	}
	if m.JSONRPC != "2.0" {
		c.t.Errorf("message without jsonrpc 2.0: %s", data)
	}
	if m.Method != "" {
		c.seen = append(c.seen, m)
	}
	return m
}

// send sends a request and returns its id.
func (c *client) send(method string, params any) string {
	c.t.Helper()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.w.send(data); err != nil {
		c.t.Fatalf("send %s: %v", method, err)
	}
	return id
}

// reply reads until the response to id, keeping notifications for later.
func (c *client) reply(id string) msg {
	c.t.Helper()
	var kept []msg
	for {
		m := c.read()
		if m.Method == "" && string(m.ID) == id {
			c.pending = append(kept, c.pending...)
			return m
		}
		kept = append(kept, m)
	}
}

// call sends a request and decodes its result into out (when not nil); an
// error response fails the test.
func (c *client) call(method string, params, out any) {
	c.t.Helper()
	m := c.reply(c.send(method, params))
	if m.Error != nil {
		c.t.Fatalf("%s: %v", method, m.Error)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
}

// callErr sends a request that must fail and returns its error.
func (c *client) callErr(method string, params any) *protocol.Error {
	c.t.Helper()
	m := c.reply(c.send(method, params))
	if m.Error == nil {
		c.t.Fatalf("%s succeeded with %s, want an error", method, m.Result)
	}
	return m.Error
}

// until reads notifications until one of method satisfies ok (nil: any),
// decoding its params into out.
func (c *client) until(method string, out any, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		m := c.read()
		if m.Method != method {
			continue
		}
		if out != nil {
			if err := json.Unmarshal(m.Params, out); err != nil {
				c.t.Fatalf("%s params %s: %v", method, m.Params, err)
			}
		}
		if ok == nil || ok() {
			return
		}
	}
	c.t.Fatalf("no %s notification", method)
}

func (c *client) initialize() {
	c.t.Helper()
	var res protocol.InitializeResult
	c.call(protocol.MethodInitialize, protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: "test"}}, &res)
	if res.ProtocolVersion != protocol.ProtocolVersion || res.ServerInfo.Name == "" {
		c.t.Fatalf("initialize: %+v", res)
	}
}

func text(s string) []protocol.InputPart { return []protocol.InputPart{{Type: "text", Text: s}} }

// pipeWire is a stdio connection through in-process pipes.
type pipeWire struct {
	in  *io.PipeWriter // the server's stdin
	out *io.PipeReader // the server's stdout
	buf []byte
}

func (p *pipeWire) send(data []byte) error {
	_, err := p.in.Write(append(data, '\n'))
	return err
}

func (p *pipeWire) recv() ([]byte, error) {
	for {
		if i := strings.IndexByte(string(p.buf), '\n'); i >= 0 {
			line := p.buf[:i]
			p.buf = p.buf[i+1:]
			return line, nil
		}
		chunk := make([]byte, 64<<10)
		n, err := p.out.Read(chunk)
		p.buf = append(p.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

func (p *pipeWire) close() {
	p.in.Close()
	p.out.Close()
}

// stdioClient serves one stdio connection of s and returns its client.
func stdioClient(t *testing.T, s *server.Server) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(context.Background(), inR, outW) }()
	w := &pipeWire{in: inW, out: outR}
	t.Cleanup(func() {
		w.close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return &client{t: t, w: w}
}
