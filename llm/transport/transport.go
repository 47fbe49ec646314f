// Package transport is the HTTP client the model adapters share (DESIGN §12
// "Bounded"): every phase of a model call over HTTP has a bound — the
// connection, the TLS handshake, the wait for the response's headers, and
// the silence between two reads of its body — so that a provider (or
// something posing as one) that stops answering costs a connection for a
// bounded time instead of a turn for ever. A bound that fires ends the call
// with an *llm.Error of kind llm.Timeout whose Code names the phase.
//
// The idle bound is one timer per response, pushed back by each read that
// returns bytes: no goroutine per read, and nothing per read but a timer
// reset.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
)

// Defaults of Timeouts. The idle and header bounds are generous: reasoning
// models think for minutes before their next token, and a server that
// answers with whole bodies (no streaming) sends its headers only when the
// answer is done.
const (
	DefaultConnect        = 30 * time.Second
	DefaultTLSHandshake   = 30 * time.Second
	DefaultResponseHeader = 5 * time.Minute
	DefaultIdle           = 5 * time.Minute
)

// Codes of the llm.Timeout errors, in *llm.Error.Code: which bound fired.
const (
	CodeConnect        = "connect_timeout"
	CodeTLSHandshake   = "tls_handshake_timeout"
	CodeResponseHeader = "response_header_timeout"
	CodeIdle           = "idle_timeout"
)

// Timeouts bound the phases of a model call over HTTP. A zero field takes
// its default; a negative one turns the bound off.
type Timeouts struct {
	// Connect bounds opening the TCP connection (default 30 s).
	Connect time.Duration
	// TLSHandshake bounds the TLS handshake (default 30 s).
	TLSHandshake time.Duration
	// ResponseHeader bounds the wait for the response's headers once the
	// request is sent (default 5 min).
	ResponseHeader time.Duration
	// Idle bounds the silence between two reads of the response's body
	// (default 5 min).
	Idle time.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// withDefaults returns t with its defaults filled in and the bounds turned
// off set to 0.
func (t Timeouts) withDefaults() Timeouts {
	return Timeouts{
		Connect:        orDefault(t.Connect, DefaultConnect),
		TLSHandshake:   orDefault(t.TLSHandshake, DefaultTLSHandshake),
		ResponseHeader: orDefault(t.ResponseHeader, DefaultResponseHeader),
		Idle:           orDefault(t.Idle, DefaultIdle),
	}
}

// bases are the shared transports by their connect and TLS bounds, so that
// every model with the same bounds shares one connection pool.
var bases sync.Map // [2]time.Duration → *http.Transport

func base(connect, tls time.Duration) *http.Transport {
	key := [2]time.Duration{connect, tls}
	if t, ok := bases.Load(key); ok {
		return t.(*http.Transport)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = tls
	got, _ := bases.LoadOrStore(key, t)
	return got.(*http.Transport)
}

// Client returns an HTTP client for model traffic with t's bounds. It has
// no overall timeout: a call is as long as its answer, bounded by its
// context and by the bounds between bytes.
func Client(t Timeouts) *http.Client {
	t = t.withDefaults()
	return &http.Client{Transport: &roundTripper{base: base(t.Connect, t.TLSHandshake), header: t.ResponseHeader, idle: t.Idle}}
}

// Wrap returns a client that sends through c with t's response-header and
// idle bounds; the connect and TLS bounds are c's transport's own. A nil c
// is Client(t).
func Wrap(c *http.Client, t Timeouts) *http.Client {
	if c == nil {
		return Client(t)
	}
	t = t.withDefaults()
	w := *c
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	w.Transport = &roundTripper{base: rt, header: t.ResponseHeader, idle: t.Idle}
	return &w
}

// roundTripper adds the header and idle bounds to its base: one timer per
// call, armed for the headers, then for each silence of the body.
type roundTripper struct {
	base         http.RoundTripper
	header, idle time.Duration
}

// RoundTrip implements http.RoundTripper.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	var timer *time.Timer
	if rt.header > 0 {
		timer = time.AfterFunc(rt.header, func() {
			cancel(timeoutError(CodeResponseHeader, rt.header, "for the response's headers"))
		})
	}
	resp, err := rt.base.RoundTrip(req.WithContext(ctx))
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		err = classify(ctx, err)
		cancel(nil)
		return nil, err
	}
	b := &body{rc: resp.Body, ctx: ctx, cancel: cancel, idle: rt.idle}
	if rt.idle > 0 {
		b.timer = time.AfterFunc(rt.idle, func() {
			cancel(timeoutError(CodeIdle, rt.idle, "between two reads of the response"))
		})
	}
	resp.Body = b
	return resp, nil
}

// classify returns the error of a call that got no response: the bound
// that fired as an llm.Timeout error, or err as it is.
func classify(ctx context.Context, err error) error {
	if le := fired(ctx); le != nil {
		return le
	}
	var ne net.Error
	if ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
		// The caller's own cancellation, or no bound at all.
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &llm.Error{Kind: llm.Timeout, Code: CodeConnect, Message: "the provider's server did not accept the connection in time; check the base URL and the network", Err: err}
	}
	// The base transport's only other bound is the TLS handshake's.
	return &llm.Error{Kind: llm.Timeout, Code: CodeTLSHandshake, Message: "the TLS handshake with the provider's server did not finish in time; check the base URL and the network", Err: err}
}

// fired returns the error of the bound that cancelled ctx, or nil when none
// did (the caller's own cancellation is not a timeout).
func fired(ctx context.Context) *llm.Error {
	var le *llm.Error
	if errors.As(context.Cause(ctx), &le) && le.Kind == llm.Timeout {
		return le
	}
	return nil
}

func timeoutError(code string, d time.Duration, what string) *llm.Error {
	return &llm.Error{Kind: llm.Timeout, Code: code,
		Message: fmt.Sprintf("the provider sent nothing for %s %s; the call was cut (raise idle_timeout in the provider's table of the config file if its model pauses longer)", d, what)}
}

// body is a response body whose reads push the idle bound back.
type body struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
}

// Read implements io.Reader. A read cut by a bound returns the bound's
// llm.Timeout error instead of the transport's "context canceled".
func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.timer != nil {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF {
		if le := fired(b.ctx); le != nil {
			return n, le
		}
	}
	return n, err
}

// Close implements io.Closer: it stops the timer and releases the call's
// context.
func (b *body) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
