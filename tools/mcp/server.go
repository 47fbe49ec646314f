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
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// terminateGrace is how long a stdio server may take to exit after its
// input is closed before it is signalled.
const terminateGrace = 2 * time.Second

// The restart policy of a server whose connection ended (a stdio server
// that died, an HTTP server that forgot the session). Variables so that
// tests can shorten them.
var (
	// restartEvery is the least time between two restart attempts of one
	// server: a call that finds the server dead sooner waits for the rest.
	restartEvery = 2 * time.Second
	// maxRestarts is how many restarts in a row, failed or followed by no
	// answered call, a server gets; then it is down for good.
	maxRestarts = 5
)

// server is one configured MCP server and its current connection, which
// it replaces when the connection ends (restart).
type server struct {
	cfg   ServerConfig
	log   *slog.Logger
	tools []*remoteTool
	// stderr holds the end of the current (or last) process's stderr, for
	// stdio servers; each process gets a fresh one.
	stderr atomic.Pointer[tail]

	// life ends when the Manager closes, cutting a restart short.
	life context.Context
	stop context.CancelFunc

	mu  sync.Mutex
	cur *conn // nil while a restart runs, after one failed, and when down
	// restarting is closed when the restart under way ends; nil when none
	// runs. Calls that find the server dead meanwhile wait for it.
	restarting chan struct{}
	tries      int       // restarts since the last answered call
	lastTry    time.Time // when the last restart ended
	lastErr    error     // why the last restart failed; nil if it worked
	down       bool      // tries ran out: its calls fail until rein starts again
	closed     bool
}

// conn is one connection to a server: for stdio, one process.
type conn struct {
	session *sdk.ClientSession
	cmd     *exec.Cmd // stdio only

	// gone is cancelled, with the reason, when the connection ends:
	// calls in flight are cut short by it and later calls restart the
	// server.
	gone    context.Context
	setGone context.CancelCauseFunc
	// watched is closed when the goroutine watching the session exits.
	watched chan struct{}
	warn    sync.Once
}

// connect starts the server (stdio) or reaches it (HTTP), initializes the
// session and lists its tools, all within the start timeout.
func connect(ctx context.Context, cfg ServerConfig, log *slog.Logger) (*server, error) {
	s := &server{cfg: cfg, log: log.With("mcp_server", cfg.Name)}
	s.life, s.stop = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	c, err := s.dial(ctx)
	if err != nil {
		s.stop()
		return nil, s.startError(err)
	}
	s.cur = c
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			s.close()
			if ctx.Err() != nil {
				err = fmt.Errorf("not ready within %s: %w", cfg.StartTimeout, err)
			}
			return nil, s.startError(fmt.Errorf("listing tools: %w", err))
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

// dial starts one process (stdio) or session (HTTP) and initializes it
// within the start timeout and ctx. It does not list the tools.
func (s *server) dial(ctx context.Context) (*conn, error) {
	c := &conn{watched: make(chan struct{})}
	var transport sdk.Transport
	if s.cfg.Command != "" {
		stderr := &tail{max: 2048}
		s.stderr.Store(stderr)
		// Not CommandContext: the server outlives the start context.
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = append(sandbox.ScrubEnv(os.Environ()), expand(s.cfg.Env)...)
		cmd.Dir = s.cfg.Dir
		cmd.Stderr = stderr
		// Its own group, so stopping it stops what it started; and killed
		// if rein dies.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		c.cmd = cmd
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}
	} else {
		transport = &sdk.StreamableClientTransport{
			Endpoint:             s.cfg.URL,
			HTTPClient:           &http.Client{Transport: headerTransport{headers: expandMap(s.cfg.Headers), base: http.DefaultTransport}},
			DisableStandaloneSSE: true,
		}
	}

	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "rein", Version: "0"}, &sdk.ClientOptions{Logger: s.log})
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		c.stopProcess()
		if ctx.Err() != nil {
			err = fmt.Errorf("not ready within %s: %w", s.cfg.StartTimeout, err)
		}
		return nil, err
	}
	c.session = session
	c.gone, c.setGone = context.WithCancelCause(context.Background())
	go func() {
		defer close(c.watched)
		err := session.Wait()
		if err == nil {
			err = errors.New("the connection was closed")
		}
		c.setGone(err)
	}()
	return c, nil
}

// startError is why the server could not start, with what it printed.
func (s *server) startError(err error) error {
	if last := s.output(); last != "" {
		err = fmt.Errorf("%w (its stderr: %s)", err, last)
	}
	return fmt.Errorf("mcp: server %q: %w", s.cfg.Name, err)
}

// output is the end of the last process's stderr on one line, or "".
func (s *server) output() string {
	if t := s.stderr.Load(); t != nil {
		return t.String()
	}
	return ""
}

// lastLine is the last line the last process wrote to stderr, or "".
func (s *server) lastLine() string {
	if t := s.stderr.Load(); t != nil {
		return t.lastLine()
	}
	return ""
}

// stopProcess kills a stdio server and its group.
func (c *conn) stopProcess() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close ends the session (for stdio: closes the server's input, then
// signals it) and waits for the watcher.
func (c *conn) close() error {
	err := c.session.Close()
	<-c.watched
	// Whatever the server started in its group goes with it.
	c.stopProcess()
	return err
}

// close stops the server: it cuts a restart under way short, waits for it,
// and closes the connection.
func (s *server) close() error {
	s.mu.Lock()
	s.closed = true
	c, restarting := s.cur, s.restarting
	s.cur = nil
	s.mu.Unlock()
	s.stop()
	if restarting != nil {
		<-restarting
	}
	if c == nil {
		return nil
	}
	wasGone := c.gone.Err() != nil
	err := c.close()
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
//
// A call that finds the server's connection ended restarts the server
// (conn). A call whose request the server cannot have received (the
// connection was already broken, or the HTTP server no longer knows the
// session) is sent again once, on the restarted server; a call that may
// have run is never sent again.
func (s *server) call(ctx context.Context, name, qualified string, args json.RawMessage) (tool.Output, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	restarted := false
	for {
		c, fail, err := s.conn(ctx, qualified, &restarted)
		if err != nil {
			return tool.Output{}, err
		}
		if fail != nil {
			return *fail, nil
		}
		out, unsent, err := s.callOn(ctx, c, name, qualified, args)
		if unsent && !restarted {
			s.log.Debug("MCP call not sent: the connection had ended; sending it again after a restart", "tool", qualified, "detail", out.Text)
			continue
		}
		return out, err
	}
}

// callOn sends one call on the connection c. unsent says the server cannot
// have received it; the connection is then marked ended, so the next call
// restarts the server. err is only the caller's cancellation.
func (s *server) callOn(ctx context.Context, c *conn, name, qualified string, args json.RawMessage) (out tool.Output, unsent bool, err error) {
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	// A server that dies cuts its calls short even if the SDK would wait.
	stop := context.AfterFunc(c.gone, cancel)
	defer stop()
	sent := &sendState{}
	callCtx = context.WithValue(callCtx, sendKey{}, sent)

	res, err := c.session.CallTool(callCtx, &sdk.CallToolParams{Name: name, Arguments: args})
	switch {
	case err == nil:
		s.answered(c)
		return toOutput(res), false, nil
	case ctx.Err() != nil:
		return tool.Output{}, false, ctx.Err()
	case notSent(err, sent):
		c.setGone(fmt.Errorf("a call could not be sent: %w", err))
		return failed("%s was not sent: the connection to MCP server %q had ended (%v); rein restarts the server on the next call to one of its tools", qualified, s.cfg.Name, err), true, nil
	case c.died(err):
		s.warnGone(c)
		return failed("%s failed: %s", qualified, s.goneReason()), false, nil
	case callCtx.Err() != nil:
		return failed("%s did not answer within %s; the call was abandoned (the server's call_timeout)", qualified, s.cfg.CallTimeout), false, nil
	default:
		return failed("%s failed: %v", qualified, err), false, nil
	}
}

// notSent reports whether the call's request never reached the server, or
// reached it and was refused unrun: the connection was already broken when
// the call was made (the SDK's "client is closing", which it returns
// before writing anything), or an HTTP server answered the call's own
// request 404 (a server that restarted and no longer knows the session).
// Anything else may have run. The HTTP answer is watched for this call
// (sendState) rather than read from the error: when one request finds the
// session gone, the SDK fails every call in flight with that request's
// error, though those calls may have run.
func notSent(err error, sent *sendState) bool {
	if sent.refused.Load() {
		return true
	}
	return errors.Is(err, sdk.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing")
}

// sendState watches the HTTP requests of one call (through its context).
type sendState struct {
	// refused says the call's own tools/call request was answered 404.
	refused atomic.Bool
}

type sendKey struct{}

// answered notes that c answered a call: the server works, so its
// restarts in a row start again from zero.
func (s *server) answered(c *conn) {
	s.mu.Lock()
	if s.cur == c {
		s.tries = 0
	}
	s.mu.Unlock()
}

// conn returns the server's live connection, restarting the server when
// its connection ended and this call has not restarted it yet; or the
// failed result the call answers with; or the caller's context error.
// Restarts are one at a time: calls that find one under way wait for it.
func (s *server) conn(ctx context.Context, qualified string, restarted *bool) (*conn, *tool.Output, error) {
	s.mu.Lock()
	for {
		if err := ctx.Err(); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		switch c := s.cur; {
		case s.closed:
			s.mu.Unlock()
			return nil, new(failed("%s cannot be used: rein is stopping its MCP servers", qualified)), nil
		case s.down:
			s.mu.Unlock()
			return nil, new(failed("%s cannot be used: %s", qualified, s.downReason())), nil
		case c != nil && c.gone.Err() == nil:
			s.mu.Unlock()
			return c, nil, nil
		}
		if ch := s.restarting; ch != nil {
			// Another call is restarting it: its attempt is this call's.
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			*restarted = true
			s.mu.Lock()
			continue
		}
		if *restarted {
			// This call had its attempt, and it failed.
			msg := s.restartFailed()
			s.mu.Unlock()
			return nil, new(failed("%s cannot be used: %s", qualified, msg)), nil
		}
		*restarted = true
		if s.tries >= maxRestarts {
			s.setDown()
			continue
		}
		old := s.cur
		s.cur = nil
		ch := make(chan struct{})
		s.restarting = ch
		wait := time.Until(s.lastTry.Add(restartEvery))
		s.mu.Unlock()

		if old != nil {
			s.warnGone(old)
		}
		c, err := s.restart(ctx, old, wait)

		s.mu.Lock()
		if c != nil && s.closed {
			s.mu.Unlock()
			c.close()
			s.mu.Lock()
			c = nil
		}
		switch {
		case c != nil:
			s.cur, s.lastErr = c, nil
			s.tries++
			s.lastTry = time.Now()
			s.log.Info("MCP server restarted", "restart", s.tries)
		case s.closed || ctx.Err() != nil:
			// Not the server's failure: the attempt does not count.
		default:
			s.tries++
			s.lastTry = time.Now()
			s.lastErr = err
			s.log.Warn("MCP server did not restart", "restart", s.tries, "of", maxRestarts, "err", err, "stderr", s.lastLine())
			if s.tries >= maxRestarts {
				s.setDown()
			}
		}
		s.restarting = nil
		close(ch)
	}
}

// restart closes the ended connection old (reaping a dead process and its
// group), waits until a restart is allowed, and connects anew.
func (s *server) restart(ctx context.Context, old *conn, wait time.Duration) (*conn, error) {
	if old != nil {
		_ = old.close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.dial(ctx)
}

// setDown gives the server up; s.mu is held.
func (s *server) setDown() {
	if !s.down {
		s.down = true
		s.log.Error("MCP server is down: it stopped and did not come back; its tools fail until rein starts again", "restarts", s.tries, "detail", s.downReason())
	}
}

// died reports whether err means the connection c is gone. The watcher may
// not have seen it yet, so an error that says so counts too.
func (c *conn) died(err error) bool {
	if c.gone.Err() != nil {
		return true
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, sdk.ErrConnectionClosed) &&
		!errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.EPIPE) {
		return false
	}
	select {
	case <-c.gone.Done():
	case <-time.After(deathWait):
	}
	return true
}

// deathWait is how long a call that lost its connection waits for the
// watcher to learn why, so the result can say it.
const deathWait = time.Second

// goneReason says that the server stopped, for a call that was under way.
func (s *server) goneReason() string {
	msg := fmt.Sprintf("MCP server %q stopped", s.cfg.Name)
	if last := s.output(); last != "" {
		msg += "; its last output: " + last
	}
	return msg + "; the call may or may not have run. rein restarts the server on the next call to one of its tools"
}

// restartFailed says why this call's restart failed; s.mu is held.
func (s *server) restartFailed() string {
	msg := fmt.Sprintf("MCP server %q stopped and did not restart (attempt %d of %d", s.cfg.Name, s.tries, maxRestarts)
	if s.lastErr != nil {
		msg += ": " + s.lastErr.Error()
	}
	msg += ")"
	if line := s.lastLine(); line != "" {
		msg += "; its last stderr line: " + line
	}
	return msg + fmt.Sprintf("; rein tries again on the next call to one of its tools, at most once every %s", restartEvery)
}

// downReason says the server is down for good and how to look into it.
func (s *server) downReason() string {
	msg := fmt.Sprintf("MCP server %q is down: it stopped and %d restarts in a row did not bring it back", s.cfg.Name, maxRestarts)
	if s.lastErr != nil {
		msg += " (the last: " + s.lastErr.Error() + ")"
	}
	msg += "; its tools cannot be used until rein starts again. "
	if s.cfg.Command != "" {
		msg += "To see why, run its command by hand: " + commandLine(s.cfg.Command, s.cfg.Args)
		if len(s.cfg.Env) > 0 {
			msg += " (with the env of [mcp.servers." + s.cfg.Name + "])"
		}
		if line := s.lastLine(); line != "" {
			msg += "; its last stderr line: " + line
		}
	} else {
		msg += "To see why, check that " + s.cfg.URL + " answers"
	}
	return msg
}

// commandLine shows a command and its arguments as a shell would take
// them.
func commandLine(name string, args []string) string {
	parts := make([]string, 0, 1+len(args))
	for _, a := range append([]string{name}, args...) {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// warnGone logs once per connection that the server stopped.
func (s *server) warnGone(c *conn) {
	c.warn.Do(func() {
		s.log.Warn("MCP server stopped; rein restarts it on the next call to one of its tools", "reason", context.Cause(c.gone), "stderr", s.lastLine())
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

// text returns the bytes kept, copied under the lock: Write reuses the
// buffer when it trims it.
func (t *tail) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}

// String returns the last lines kept, on one line.
func (t *tail) String() string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(t.text(), "")), " ")
}

// lastLine returns the last non-empty line kept, trimmed.
func (t *tail) lastLine() string {
	lines := strings.Split(strings.ToValidUTF8(t.text(), ""), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
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
	resp, err := h.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusNotFound && r.Method == http.MethodPost {
		if st, ok := r.Context().Value(sendKey{}).(*sendState); ok && isToolCall(r) {
			st.refused.Store(true)
		}
	}
	return resp, err
}

// isToolCall reports whether the body of r is a tools/call request (and
// not, say, the notification that cancels one, which shares its context).
func isToolCall(r *http.Request) bool {
	if r.GetBody == nil {
		return false
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	var msg struct {
		Method string `json:"method"`
	}
	return json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&msg) == nil && msg.Method == "tools/call"
}
