// Command serve measures the memory of a real `rein serve --stdio` process
// holding many idle threads (DESIGN §11: 10,000 idle threads ≤ 200 MB RSS).
//
// It drives the server over its stdin and stdout with JSON-RPC, as an
// editor would, and reads the child's VmRSS and VmHWM from
// /proc/PID/status:
//
//  1. created: one process starts N threads (thread/start) and runs one
//     turn on each against a scripted model (turn/start, then waits for
//     turn/completed), so every thread has its model opened, its turn and
//     its items in memory, and the connection watches all of them;
//  2. resumed: a fresh process over the same database loads the N threads
//     (thread/list, then thread/resume each), as after a restart.
//
// With -inproc the child is this program itself serving stdio with
// server, session and the SQLite store (the way rein serve wires them,
// with a scripted model per thread and no tools), and -subbuf sets the
// scheduler's SubscriberBuffer, to see what the per-thread costs are.
//
// Usage:
//
//	go build -o /tmp/rein ./cmd/rein
//	go run ./bench/serve -rein /tmp/rein -threads 10000
//	go run ./bench/serve -inproc -subbuf 64 -threads 10000
//	go run ./bench/serve -rein /tmp/rein -gctrace 2>&1 | grep '^gc\|^created\|^resumed'
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
)

func main() {
	rein := flag.String("rein", "rein", "the rein binary to measure")
	threads := flag.Int("threads", 10000, "how many threads to create and load")
	window := flag.Int("window", 32, "how many threads are being created at once")
	keep := flag.Bool("keep", false, "keep the temporary directory (database, script) and print its path")
	inproc := flag.Bool("inproc", false, "measure this program serving (server, session, store) instead of -rein")
	subbuf := flag.Int("subbuf", 0, "with -inproc: the scheduler's SubscriberBuffer (0: its default)")
	flag.BoolVar(&gctrace, "gctrace", false, "pass the child's stderr through with GODEBUG=gctrace=1")
	child := flag.Bool("child", false, "serve stdio (used by -inproc)")
	db := flag.String("db", "", "with -child: the database")
	scriptPath := flag.String("script", "", "with -child: the scripted model")
	flag.Parse()
	if *child {
		if err := serveChild(*db, *scriptPath, *subbuf); err != nil {
			fmt.Fprintln(os.Stderr, "bench/serve child:", err)
			os.Exit(1)
		}
		return
	}
	start := func(db, script, ws string) (*client, error) {
		if *inproc {
			self, err := os.Executable()
			if err != nil {
				return nil, err
			}
			return startServer(self, []string{"-child", "-db", db, "-script", script, "-subbuf", strconv.Itoa(*subbuf)})
		}
		return startServer(*rein, []string{"serve", "--stdio", "--db", db, "--model", "scripted:" + script, "--workspace", ws})
	}
	if err := run(start, *threads, *window, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

// gctrace runs children with GODEBUG=gctrace=1 (the -gctrace flag).
var gctrace bool

// script is the scripted model each thread plays: one answer.
const script = "model: scripted-bench\nrounds:\n  - text: \"hello, this thread is idle now\"\n    usage: {input_tokens: 40, output_tokens: 8}\n"

func run(start func(db, script, ws string) (*client, error), n, window int, keep bool) error {
	dir, err := os.MkdirTemp("", "rein-bench-serve-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	scriptPath := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return err
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return err
	}
	db := filepath.Join(dir, "rein.db")
	fmt.Printf("machine: %s cores (nproc); load average %s\n", cores(), loadavg())

	// 1. created.
	c, err := start(db, scriptPath, ws)
	if err != nil {
		return err
	}
	base, _ := c.mem()
	t0 := time.Now()
	if err := createThreads(c, n, window); err != nil {
		c.close()
		return err
	}
	elapsed := time.Since(t0)
	m, err := c.mem()
	if err != nil {
		c.close()
		return err
	}
	fmt.Printf("created: %d threads with one turn each in %.1fs; baseline RSS %s; RSS %s (HWM %s); %s/thread above baseline; overload retries %d\n",
		n, elapsed.Seconds(), mb(base.rss), mb(m.rss), mb(m.hwm), kb((m.rss-base.rss)/int64(n)), c.retries.Load())
	if err := c.close(); err != nil {
		return fmt.Errorf("first server: %w", err)
	}

	// 2. resumed, in a fresh process.
	c, err = start(db, scriptPath, ws)
	if err != nil {
		return err
	}
	defer c.close()
	base, _ = c.mem()
	t0 = time.Now()
	ids, err := listThreads(c)
	if err != nil {
		return err
	}
	if len(ids) != n {
		return fmt.Errorf("thread/list gave %d threads, want %d", len(ids), n)
	}
	if err := resumeThreads(c, ids, window); err != nil {
		return err
	}
	elapsed = time.Since(t0)
	m, err = c.mem()
	if err != nil {
		return err
	}
	fmt.Printf("resumed: %d threads listed and resumed in %.1fs; baseline RSS %s; RSS %s (HWM %s); %s/thread above baseline\n",
		n, elapsed.Seconds(), mb(base.rss), mb(m.rss), mb(m.hwm), kb((m.rss-base.rss)/int64(n)))
	return nil
}

// createThreads starts n threads, window at a time, each running one turn
// to its end.
func createThreads(c *client, n, window int) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range window {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := oneThread(c); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// oneThread starts a thread and runs one turn on it.
func oneThread(c *client) error {
	var th struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := c.call("thread/start", map[string]any{}, &th); err != nil {
		return err
	}
	done := c.awaitTurn(th.Thread.ID)
	var tu struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := c.call("turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "hello"}}}, &tu); err != nil {
		return err
	}
	select {
	case status := <-done:
		if status != "completed" {
			return fmt.Errorf("thread %s: turn %s ended %s", th.Thread.ID, tu.Turn.ID, status)
		}
		return nil
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("thread %s: turn %s did not complete in 2 minutes", th.Thread.ID, tu.Turn.ID)
	}
}

func listThreads(c *client) ([]string, error) {
	var ids []string
	cursor := ""
	for {
		var page struct {
			Threads []struct {
				ID string `json:"id"`
			} `json:"threads"`
			NextCursor string `json:"nextCursor"`
		}
		p := map[string]any{"limit": 500}
		if cursor != "" {
			p["cursor"] = cursor
		}
		if err := c.call("thread/list", p, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Threads {
			ids = append(ids, t.ID)
		}
		if page.NextCursor == "" {
			return ids, nil
		}
		cursor = page.NextCursor
	}
}

func resumeThreads(c *client, ids []string, window int) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range window {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(ids)) {
					return
				}
				if err := c.call("thread/resume", map[string]any{"threadId": ids[i]}, nil); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// client is a JSON-RPC client of one `rein serve --stdio` child. Its reader
// goroutine owns stdout and exits when the child closes it.
type client struct {
	pid   int // whose /proc/PID/status is read
	stdin io.WriteCloser
	done  chan struct{} // closed when the reader exits
	// wait waits for the server to end once stdin is closed; kill ends it
	// when it does not.
	wait func() error
	kill func()

	wmu sync.Mutex // serializes writes to stdin

	mu      sync.Mutex
	nextID  int
	calls   map[int]chan response
	turns   map[string]chan string // thread id → status of its next turn/completed
	retries atomic.Int64
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// codeOverloaded is the server's "overloaded, retry" (DESIGN §9).
const codeOverloaded = -32001

func newClient() *client {
	return &client{calls: make(map[int]chan response), turns: make(map[string]chan string), done: make(chan struct{})}
}

// startServer runs rein with args as a child process.
func startServer(rein string, args []string) (*client, error) {
	c := newClient()
	cmd := exec.Command(rein, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if gctrace {
		// The child's GC trace shows its live heap, which RSS hides:
		// allocated pages never written are not resident.
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
		cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.pid = cmd.Process.Pid
	c.wait = func() error {
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("%w (stderr: %s)", err, stderr.String())
		}
		return nil
	}
	c.kill = func() { cmd.Process.Kill() }
	go c.read(out)
	return c, c.initialize()
}

// serveChild serves stdio with the SQLite store, the scheduler over it and
// the server, as rein serve wires them; each thread plays its own scripted
// model, opened on its first run and kept, as rein serve keeps each
// thread's model.
func serveChild(db, scriptPath string, subbuf int) error {
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	var mu sync.Mutex
	models := make(map[string]llm.Model)
	setup := func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
		mu.Lock()
		defer mu.Unlock()
		m, ok := models[th.ID]
		if !ok {
			sm, err := scripted.Load(scriptPath)
			if err != nil {
				return loop.Options{}, nil, err
			}
			m = sm
			models[th.ID] = m
		}
		return loop.Options{Model: m}, nil, nil
	}
	sched, err := session.New(session.Config{Store: session.NewSQLStore(st), Setup: setup, SubscriberBuffer: subbuf})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		sched.Close(cctx)
	}()
	srv, err := server.New(server.Config{Sessions: sched})
	if err != nil {
		return err
	}
	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

func (c *client) initialize() error {
	if err := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "bench-serve"}}, nil); err != nil {
		c.close()
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

func (c *client) read(r io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			response
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			continue
		}
		switch {
		case msg.ID != nil:
			c.mu.Lock()
			ch := c.calls[*msg.ID]
			delete(c.calls, *msg.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- msg.response
			}
		case msg.Method == "turn/completed":
			var p struct {
				ThreadID string `json:"threadId"`
				Turn     struct {
					Status string `json:"status"`
				} `json:"turn"`
			}
			if json.Unmarshal(msg.Params, &p) != nil {
				continue
			}
			c.mu.Lock()
			ch := c.turns[p.ThreadID]
			delete(c.turns, p.ThreadID)
			c.mu.Unlock()
			if ch != nil {
				ch <- p.Turn.Status
			}
		}
	}
	// The child is gone: fail whatever still waits.
	c.mu.Lock()
	for id, ch := range c.calls {
		ch <- response{Error: &struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{Code: -1, Message: "the server exited"}}
		delete(c.calls, id)
	}
	c.mu.Unlock()
}

// awaitTurn returns a channel that receives the status of the thread's
// next turn/completed.
func (c *client) awaitTurn(threadID string) <-chan string {
	ch := make(chan string, 1)
	c.mu.Lock()
	c.turns[threadID] = ch
	c.mu.Unlock()
	return ch
}

// call sends a request and decodes its result into out (nil: discard),
// retrying while the server answers overloaded.
func (c *client) call(method string, params, out any) error {
	for attempt := 0; ; attempt++ {
		r, err := c.send(method, params)
		if err != nil {
			return err
		}
		if r.Error != nil && r.Error.Code == codeOverloaded && attempt < 100 {
			c.retries.Add(1)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(r.Result, out)
	}
}

func (c *client) send(method string, params any) (response, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.calls[id] = ch
	c.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return response{}, err
	}
	c.wmu.Lock()
	_, err = c.stdin.Write(append(b, '\n'))
	c.wmu.Unlock()
	if err != nil {
		return response{}, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-time.After(2 * time.Minute):
		return response{}, fmt.Errorf("%s: no answer in 2 minutes", method)
	}
}

// close ends the connection (the server exits when stdin closes) and
// waits for the child.
func (c *client) close() error {
	c.stdin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-c.done:
	case <-ctx.Done():
		c.kill()
	}
	return c.wait()
}

// memory is the child's resident set, now and at its highest, in bytes.
type memory struct{ rss, hwm int64 }

func (c *client) mem() (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = v << 10
		case "VmHWM:":
			m.hwm = v << 10
		}
	}
	if m.rss == 0 {
		return m, errors.New("no VmRSS in /proc/PID/status")
	}
	return m, nil
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
func kb(b int64) string { return fmt.Sprintf("%.1f KB", float64(b)/(1<<10)) }

func cores() string {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
