package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// terminateGrace is how long a stdio server may take to exit after its
// input is closed before it is signalled.
const terminateGrace = 2 * time.Second

// server is one connected MCP server.
type server struct {
	cfg     ServerConfig
	log     *slog.Logger
	session *sdk.ClientSession
	tools   []*remoteTool
	stderr  *tail // stdio servers only
	cmd     *exec.Cmd

	// gone is cancelled, with the reason, when the connection ends:
	// calls in flight are cut short by it and later calls refused.
	gone context.Context
	// watched is closed when the goroutine watching the session exits.
	watched chan struct{}
	warn    sync.Once
}

// connect starts the server (stdio) or reaches it (HTTP), initializes the
// session and lists its tools, all within the start timeout.
func connect(ctx context.Context, cfg ServerConfig, log *slog.Logger) (*server, error) {
	s := &server{cfg: cfg, log: log.With("mcp_server", cfg.Name), watched: make(chan struct{})}
	var transport sdk.Transport
	if cfg.Command != "" {
		s.stderr = &tail{max: 2048}
		// Not CommandContext: the server outlives the start context.
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Env = append(sandbox.ScrubEnv(os.Environ()), expand(cfg.Env)...)
		cmd.Dir = cfg.Dir
		cmd.Stderr = s.stderr
		// Its own group, so stopping it stops what it started; and killed
		// if rein dies.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		s.cmd = cmd
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}
	} else {
		transport = &sdk.StreamableClientTransport{
			Endpoint:             cfg.URL,
			HTTPClient:           &http.Client{Transport: headerTransport{headers: expandMap(cfg.Headers), base: http.DefaultTransport}},
			DisableStandaloneSSE: true,
		}
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "rein", Version: "0"}, &sdk.ClientOptions{Logger: s.log})
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		s.stopProcess()
		return nil, s.startError(ctx, err)
	}
	s.session = session
	gone, setGone := context.WithCancelCause(context.Background())
	s.gone = gone
	go func() {
		defer close(s.watched)
		err := session.Wait()
		if err == nil {
			err = errors.New("the connection was closed")
		}
		setGone(err)
	}()

	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			s.close()
			return nil, s.startError(ctx, fmt.Errorf("listing tools: %w", err))
		}
		rt, err := newRemoteTool(s, t)
		if err != nil {
			s.log.Warn("MCP tool left out", "tool", t.Name, "err", err)
			continue
		}
		s.tools = append(s.tools, rt)
	}
	return s, nil
}

func (s *server) startError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		err = fmt.Errorf("not ready within %s: %w", s.cfg.StartTimeout, err)
	}
	if s.stderr != nil {
		if last := s.stderr.String(); last != "" {
			err = fmt.Errorf("%w (its stderr: %s)", err, last)
		}
	}
	return fmt.Errorf("mcp: server %q: %w", s.cfg.Name, err)
}

// stopProcess kills a stdio server that never became a session.
func (s *server) stopProcess() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close ends the session (for stdio: closes the server's input, then
// signals it) and waits for the watcher.
func (s *server) close() error {
	if s.session == nil {
		return nil
	}
	wasGone := s.gone.Err() != nil
	err := s.session.Close()
	<-s.watched
	// Whatever the server started in its group goes with it.
	s.stopProcess()
	if wasGone {
		// Its death was reported when it happened; how the dead
		// connection closes is no news.
		return nil
	}
	return err
}

// call runs one tool call within the server's call timeout. Failures are
// results the model can act on; only the caller's own cancellation is an
// error.
func (s *server) call(ctx context.Context, name, qualified string, args json.RawMessage) (tool.Output, error) {
	if s.gone.Err() != nil {
		return failed("%s cannot be used: %s", qualified, s.goneReason()), nil
	}
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	// A server that dies cuts its calls short even if the SDK would wait.
	stop := context.AfterFunc(s.gone, cancel)
	defer stop()

	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := s.session.CallTool(callCtx, &sdk.CallToolParams{Name: name, Arguments: args})
	switch {
	case err == nil:
		return toOutput(res), nil
	case ctx.Err() != nil:
		return tool.Output{}, ctx.Err()
	case s.died(err):
		s.warnGone()
		return failed("%s failed: %s", qualified, s.goneReason()), nil
	case callCtx.Err() != nil:
		return failed("%s did not answer within %s; the call was abandoned (the server's call_timeout)", qualified, s.cfg.CallTimeout), nil
	default:
		return failed("%s failed: %v", qualified, err), nil
	}
}

// deathWait is how long a call that lost its connection waits for the
// watcher to learn why, so the result can say it.
const deathWait = time.Second

// died reports whether err means the connection is gone. The watcher may
// not have seen it yet, so an error that says so counts too.
func (s *server) died(err error) bool {
	if s.gone.Err() != nil {
		return true
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, sdk.ErrConnectionClosed) &&
		!errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.EPIPE) {
		return false
	}
	select {
	case <-s.gone.Done():
	case <-time.After(deathWait):
	}
	return true
}

func (s *server) goneReason() string {
	msg := fmt.Sprintf("MCP server %q stopped", s.cfg.Name)
	if s.stderr != nil {
		if last := s.stderr.String(); last != "" {
			msg += "; its last output: " + last
		}
	}
	return msg + "; its tools cannot be used until rein restarts it"
}

// warnGone logs once that the server stopped.
func (s *server) warnGone() {
	s.warn.Do(func() {
		s.log.Warn("MCP server stopped; its calls now fail", "reason", context.Cause(s.gone), "detail", s.goneReason())
	})
}

// tail keeps the last bytes written to it, for error messages. It is safe
// for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// String returns the last lines kept, on one line.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
}

func expand(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+os.ExpandEnv(v))
	}
	return out
}

func expandMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = os.ExpandEnv(v)
	}
	return out
}

// headerTransport adds configured headers (such as Authorization) to every
// request to an HTTP server.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}
