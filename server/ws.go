package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// ErrTokenRequired is returned for a listen address beyond loopback without
// a token: anyone who can reach the port could run the agent's tools.
var ErrTokenRequired = errors.New("server: a bearer token is required to listen beyond loopback; pass --token, or listen on 127.0.0.1")

// CheckListen refuses a listen address that is not loopback when no token
// is given. An empty host (":8080") listens on every interface.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("server: listen address %q: %w", addr, err)
	}
	if token != "" || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("%w (address %s)", ErrTokenRequired, addr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler returns the HTTP handler of the WebSocket endpoint and the page:
// GET / upgrades to a connection of one JSON object per text frame, or,
// without an upgrade, serves the page (package web); GET /healthz answers
// ok to anyone; GET /signin?code= signs a browser in (signin.go). Every
// request must carry a loopback or allowed Host and, when it has an
// Origin, the server's own or an allowed one (checkRequest). With a token,
// a WebSocket must also carry it ("Authorization: Bearer TOKEN" or the
// rein.bearer subprotocol) or a session cookie.
func (s *Server) Handler(token string) http.Handler {
	return s.checkRequest(s.routes(token))
}

// serveWS upgrades r to a connection and serves it, as who, until it
// ends.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request, who principal) {
	// checkRequest has checked the Origin, scheme included, against the
	// server's own and the allowed ones; the library's own check (Origin
	// host == Host) would refuse an allowed origin.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{Subprotocol}})
	if err != nil {
		return // Accept has answered the client.
	}
	ws.SetReadLimit(MaxMessageSize)
	c := s.newConn(&wsTransport{c: ws})
	c.who = who
	c.serve(r.Context())
}

// ListenAndServe serves WebSocket connections on addr until ctx is done. It
// refuses an address beyond loopback without a token or named tokens
// (CheckListen). ready,
// when not nil, receives the bound address once listening.
func (s *Server) ListenAndServe(ctx context.Context, addr, token string, ready func(net.Addr)) error {
	if len(s.c.NamedTokens) == 0 {
		if err := CheckListen(addr, token); err != nil {
			return err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	hs := &http.Server{Handler: s.Handler(token), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// wsTransport is one WebSocket connection: a message per text frame.
type wsTransport struct {
	c *websocket.Conn
}

func (w *wsTransport) Read(ctx context.Context) ([]byte, error) {
	for {
		typ, data, err := w.c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return nil, io.EOF
			}
			return nil, err
		}
		if typ == websocket.MessageText {
			return data, nil
		}
	}
}

func (w *wsTransport) Write(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

func (w *wsTransport) Close() error {
	return w.c.Close(websocket.StatusNormalClosure, "")
}

// CloseWithReason closes the connection with status 1013 (try again later)
// and the reason, which the client reads if it reads at all.
func (w *wsTransport) CloseWithReason(reason string) error {
	return w.c.Close(websocket.StatusTryAgainLater, reason)
}
