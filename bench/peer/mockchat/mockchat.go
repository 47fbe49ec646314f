// Package mockchat is the harness shared by the peer benchmarks: a mock of
// the streaming Chat Completions endpoint, and a small line protocol that
// lets a coordinator drive benchmark clients running in child processes.
//
// It depends on the standard library only, so both the rein side and the
// fantasy side can use it: they cannot be built into one binary, because
// they need different versions of github.com/openai/openai-go/v3.
package mockchat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Answer is the text of a turn's last round.
const Answer = "All done."

// Server mocks the streaming Chat Completions endpoint for turns of Rounds
// rounds: while a request holds fewer than Rounds-1 tool results after its
// last user message, it streams one call of the tool "noop" with the
// arguments {"n":1}; then it streams [Answer]. It keeps no state between
// requests, so any client, any number of turns, in any order, gets the same
// answers.
//
// Besides POST …/chat/completions it answers GET /cpu with the user+system
// CPU time its process has used, in microseconds.
type Server struct {
	Rounds int
}

// request is the part of a Chat Completions request the mock reads.
type request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/cpu":
		fmt.Fprintf(w, "%d\n", ProcessCPU().Microseconds())
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.complete(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	if !req.Stream {
		http.Error(w, `{"error":{"message":"the mock only streams"}}`, http.StatusBadRequest)
		return
	}
	results := 0
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			results = 0
		case "tool":
			results++
		}
	}
	model, _ := json.Marshal(req.Model)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 512)
	// Each chunk is written and flushed on its own, as a model server does.
	send := func(choices string, usage bool) {
		buf = append(buf[:0], `data: {"id":"chatcmpl-peer","object":"chat.completion.chunk","created":1700000000,"model":`...)
		buf = append(buf, model...)
		buf = append(buf, `,"choices":[`...)
		buf = append(buf, choices...)
		buf = append(buf, ']')
		if usage {
			buf = append(buf, `,"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}`...)
		}
		buf = append(buf, "}\n\n"...)
		w.Write(buf)
		rc.Flush()
	}
	if results < s.Rounds-1 {
		id := "call_" + strconv.Itoa(results)
		send(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"`+id+`","type":"function","function":{"name":"noop","arguments":""}}]},"finish_reason":null}`, false)
		send(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"n\":1}"}}]},"finish_reason":null}`, false)
		send(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`, false)
	} else {
		send(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`, false)
		send(`{"index":0,"delta":{"content":"`+Answer+`"},"finish_reason":null}`, false)
		send(`{"index":0,"delta":{},"finish_reason":"stop"}`, false)
	}
	send("", true)
	w.Write([]byte("data: [DONE]\n\n"))
	rc.Flush()
}

// ProcessCPU is the user and system CPU time of this process.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The server child is this same binary started with serveEnv set.
const (
	serveEnv  = "PEER_MOCK_SERVE"
	roundsEnv = "PEER_MOCK_ROUNDS"
)

// ServeIfChild serves the mock and exits when this process was started by
// [StartServer]; otherwise it returns at once. Call it first in main (and
// in TestMain). The server prints its base URL on stdout and exits when
// its stdin is closed.
func ServeIfChild() {
	if os.Getenv(serveEnv) != "1" {
		return
	}
	rounds, err := strconv.Atoi(os.Getenv(roundsEnv))
	if err != nil || rounds < 1 {
		fmt.Fprintln(os.Stderr, "mockchat: bad", roundsEnv)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mockchat:", err)
		os.Exit(1)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Printf("http://%s\n", ln.Addr())
	err = http.Serve(ln, &Server{Rounds: rounds})
	fmt.Fprintln(os.Stderr, "mockchat:", err)
	os.Exit(1)
}

// Process is a mock server running in a child process.
type Process struct {
	URL   string // base URL without a trailing slash, such as http://127.0.0.1:1234
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartServer starts the mock server in a child process: this binary,
// whose main must call [ServeIfChild] first.
func StartServer(rounds int) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serveEnv+"=1", roundsEnv+"="+strconv.Itoa(rounds))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return nil, fmt.Errorf("mock server did not start: %v", err)
	}
	return &Process{URL: strings.TrimSpace(line), cmd: cmd, stdin: stdin}, nil
}

// CPU is the CPU time the server process has used so far.
func (p *Process) CPU() (time.Duration, error) {
	resp, err := http.Get(p.URL + "/cpu")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	us, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, errors.New("mock server: bad /cpu answer")
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Close stops the server and waits for it to exit.
func (p *Process) Close() error {
	p.stdin.Close()
	return p.cmd.Wait()
}

// Measurement is what a client process reports for a batch of turns.
type Measurement struct {
	Turns  int
	Wall   time.Duration
	CPU    time.Duration // the client process's user+system CPU
	Allocs uint64        // heap allocations of the client process
	Bytes  uint64        // bytes allocated by the client process
}

// RunClient is the main loop of a client process. It runs one turn to warm
// up (connections, pools) and prints "ready" and info (one line of free
// text, such as the versions built in); then for every line "N" on
// stdin it collects garbage, runs N turns and prints one line: turns, wall
// ns, CPU ns, allocations, bytes. It returns at the end of stdin, or with
// the first failed turn.
func RunClient(info string, turn func(context.Context) error) error {
	ctx := context.Background()
	if err := turn(ctx); err != nil {
		return err
	}
	fmt.Println("ready", strings.ReplaceAll(info, "\n", " "))
	in := bufio.NewScanner(os.Stdin)
	var m0, m1 runtime.MemStats
	for in.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil || n < 1 {
			return fmt.Errorf("client: bad command %q", in.Text())
		}
		runtime.GC()
		runtime.ReadMemStats(&m0)
		c0, t0 := ProcessCPU(), time.Now()
		for range n {
			if err := turn(ctx); err != nil {
				return err
			}
		}
		wall, cpu := time.Since(t0), ProcessCPU()-c0
		runtime.ReadMemStats(&m1)
		fmt.Println(n, wall.Nanoseconds(), cpu.Nanoseconds(), m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc)
	}
	return in.Err()
}

// Client is a client process speaking the [RunClient] protocol.
type Client struct {
	Info  string // what the client said about itself when ready
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// StartClient starts cmd and waits until it is ready.
func StartClient(cmd *exec.Cmd) (*Client, error) {
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Client{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := c.out.ReadString('\n')
	info, ok := strings.CutPrefix(line, "ready ")
	if err != nil || !ok {
		c.Close()
		return nil, fmt.Errorf("client %s did not start: %q %v", cmd.Path, line, err)
	}
	c.Info = strings.TrimSpace(info)
	return c, nil
}

// Run has the client run n turns.
func (c *Client) Run(n int) (Measurement, error) {
	if _, err := fmt.Fprintln(c.stdin, n); err != nil {
		return Measurement{}, err
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return Measurement{}, fmt.Errorf("client %s: %v", c.cmd.Path, err)
	}
	var m Measurement
	var wall, cpu int64
	if _, err := fmt.Sscan(line, &m.Turns, &wall, &cpu, &m.Allocs, &m.Bytes); err != nil {
		return Measurement{}, fmt.Errorf("client %s: bad answer %q", c.cmd.Path, line)
	}
	m.Wall, m.CPU = time.Duration(wall), time.Duration(cpu)
	return m, nil
}

// Close ends the client and waits for it to exit.
func (c *Client) Close() error {
	c.stdin.Close()
	return c.cmd.Wait()
}

// Versions names the versions of the modules at paths built into this
// binary, for a client's info.
func Versions(paths ...string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "no build info"
	}
	var s []string
	for _, d := range bi.Deps {
		if slices.Contains(paths, d.Path) {
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path + " " + d.Replace.Version
			}
			s = append(s, d.Path+" "+v)
		}
	}
	return strings.Join(s, ", ")
}
