// Package server is rein's app server (DESIGN §9): the sessions of a
// [session.Scheduler] over JSON-RPC 2.0, one JSON object per line on stdio
// or one per text frame on a WebSocket. docs/protocol.md describes the
// protocol; docs/protocol.schema.json is generated from this package's
// types.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/protocol"
	"sync"
	"time"

	"github.com/reinhq/rein/session"
)

// Defaults of a connection's outgoing queue.
const (
	DefaultQueueSize = 1024
	DefaultReserve   = 32
	// DefaultQueueBytes bounds the bytes a connection's queue holds: a
	// message count alone let a client that never reads, asking for large
	// answers, grow the server by gigabytes.
	DefaultQueueBytes = 16 << 20
	// DefaultStallTimeout is how long a client may go without reading
	// while its queue is full before it is disconnected.
	DefaultStallTimeout = 30 * time.Second
)

// Config configures a Server.
type Config struct {
	// Sessions runs the threads. Required. Its Setup decides the model
	// (from a factory: provider.Open in the command, llm/scripted in
	// tests) and the tools of each thread.
	Sessions *session.Scheduler
	// Name and Version are reported by initialize (default "rein", "dev").
	Name, Version string
	// CheckThread validates the config of thread/start (the model spec, the
	// workspace) so that a mistake is an error of that request rather than
	// of the first turn; nil accepts every config.
	CheckThread func(session.ThreadConfig) error
	// QueueSize bounds each connection's outgoing queue in messages;
	// Reserve of it is kept for responses (defaults DefaultQueueSize,
	// DefaultReserve).
	QueueSize, Reserve int
	// QueueBytes bounds each connection's outgoing queue in bytes,
	// notifications and responses alike; a quarter of it is kept for
	// responses (default DefaultQueueBytes, 16 MiB). A response larger than
	// the whole bound is queued alone, once the queue is empty.
	QueueBytes int
	// StallTimeout is how long a connection whose queue is full (a
	// response waits for room, or notifications are dropped) may go
	// without the client reading a message before the server sends it an
	// error, if it can, and disconnects it (default DefaultStallTimeout).
	StallTimeout time.Duration
	// AllowedHosts are the Host names, "name" (any port) or "name:port",
	// that the WebSocket endpoint answers besides loopback ones (rein
	// serve --allowed-host); any other Host is refused (DNS rebinding).
	AllowedHosts []string
	// AllowedOrigins are the origins, "scheme://host[:port]", whose pages
	// may connect besides the server's own (rein serve --allowed-origin);
	// a request with any other Origin is refused (cross-site pages).
	AllowedOrigins []string
	// Defaults, when not nil, are sent with initialize's result: the
	// settings of threads that name none and the models the server knows.
	Defaults *protocol.ThreadDefaults
	// KnowledgeBases, when not nil, lists the knowledge bases a thread/start
	// may attach (knowledgeBases), read at each initialize and thread/start;
	// without it a thread/start that names one is refused.
	KnowledgeBases func(context.Context) ([]string, error)
	// Traces, when not nil, answers turn/trace from the events the
	// runtime kept; without it turn/trace is an error.
	Traces TraceReader
	// Ready, when not nil, checks what the node needs to take work (its
	// shared store answers) for GET /readyz, which answers 503 while it
	// fails or the scheduler drains.
	Ready func(context.Context) error
	// NamedTokens are tokens besides the one Handler and ListenAndServe
	// take (the admin's, which sees every thread): a connection with one
	// sees only the threads it created (tokens.go). With any, a WebSocket
	// needs credentials even on loopback.
	NamedTokens []NamedToken
	// MaxWatched bounds how many threads one connection watches at once
	// (default DefaultMaxWatched); past it, a method that would watch
	// another thread is refused until the client calls thread/unsubscribe.
	MaxWatched int
	// Undo, when not nil, answers turn/undo with the runtime's undo;
	// without it turn/undo is an error.
	Undo Undoer
}

// Server serves the protocol on any number of connections. Several
// connections may watch one thread: each receives its notifications.
type Server struct {
	c Config
	// signins are the browser sign-ins (signin.go).
	signins *signins
	// contexts are the threads' latest context reports (context.go).
	contexts contexts
}

// New returns a server, or an error saying what the config lacks.
func New(c Config) (*Server, error) {
	if c.Sessions == nil {
		return nil, errors.New("server: Config.Sessions is nil; give a session.Scheduler")
	}
	if c.Name == "" {
		c.Name = "rein"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.Reserve <= 0 {
		c.Reserve = DefaultReserve
	}
	if c.Reserve >= c.QueueSize {
		return nil, fmt.Errorf("server: Reserve %d must be less than QueueSize %d", c.Reserve, c.QueueSize)
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.QueueBytes < minQueueBytes {
		return nil, fmt.Errorf("server: QueueBytes %d is too small to hold an answer; give at least %d", c.QueueBytes, minQueueBytes)
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.MaxWatched <= 0 {
		c.MaxWatched = DefaultMaxWatched
	}
	if err := CheckAllowed(c.AllowedHosts, c.AllowedOrigins); err != nil {
		return nil, err
	}
	if err := CheckNamedTokens("", c.NamedTokens); err != nil {
		return nil, err
	}
	return &Server{c: c, signins: newSignins()}, nil
}

// Transport moves whole messages of one connection.
type Transport interface {
	// Read returns the next message; io.EOF when the client is gone.
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	// Close ends the connection and unblocks Read and Write.
	Close() error
}

// errClosed is returned when writing to a closed connection.
var errClosed = errors.New("server: the connection is closed")

// handler runs one method (a method expression of conn, hence the
// receiver first).
type handler func(c *conn, ctx context.Context, params json.RawMessage) (any, error)

var methods = map[string]handler{
	protocol.MethodInitialize:        (*conn).initialize,
	protocol.MethodThreadStart:       (*conn).threadStart,
	protocol.MethodThreadResume:      (*conn).threadResume,
	protocol.MethodThreadList:        (*conn).threadList,
	protocol.MethodThreadRead:        (*conn).threadRead,
	protocol.MethodTurnStart:         (*conn).turnStart,
	protocol.MethodTurnSteer:         (*conn).turnSteer,
	protocol.MethodTurnInterrupt:     (*conn).turnInterrupt,
	protocol.MethodThreadCompact:     (*conn).threadCompact,
	protocol.MethodPauseAnswer:       (*conn).pauseAnswer,
	protocol.MethodApprovalAnswer:    (*conn).approvalAnswer,
	protocol.MethodTurnTrace:         (*conn).turnTrace,
	protocol.MethodTurnUndo:          (*conn).turnUndo,
	protocol.MethodThreadUnsubscribe: (*conn).threadUnsubscribe,
}

// conn is one client connection. It owns three goroutines: the reader
// (ServeConn's own), the writer, and the pump, which turns the events of
// every watched thread into notifications.
type conn struct {
	s   *Server
	t   Transport
	out *outbox

	// who the connection acts as: the admin (stdio, loopback without a
	// token, the admin token) or a named token (owner.go).
	who principal
	// mine caches the threads a named token's connection may use.
	mine ownedCache

	mu          sync.Mutex
	initialized bool
	subs        map[string]*watched

	readyMu sync.Mutex
	readyQ  []*watched    // threads with events for the pump, in the order they came
	wake    chan struct{} // signalled when readyQ grows
	stop    chan struct{} // closed when the connection ends
	pumped  chan struct{} // closed when the pump has returned
	// pumping is held while the pump turns events it took into
	// notifications: once a subscription has nothing pending, taking it
	// waits until they are all queued or dropped (tests).
	pumping sync.Mutex
}
