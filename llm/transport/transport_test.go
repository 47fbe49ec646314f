package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

func code(err error) string {
	var le *llm.Error
	if errors.As(err, &le) && le.Kind == llm.Timeout {
		return le.Code
	}
	return ""
}

// TestBounds: each phase of a call has its bound, and the bound that fires
// is named in a typed llm.Timeout error.
func TestBounds(t *testing.T) {
	const short = 150 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.URL.Path {
		case "/headers":
			<-r.Context().Done() // never answers
		case "/stall":
			w.WriteHeader(200)
			io.WriteString(w, "first")
			rc.Flush()
			<-r.Context().Done()
		case "/slow":
			// A byte every half bound: never silent for a whole one.
			w.WriteHeader(200)
			for range 8 {
				io.WriteString(w, "x")
				rc.Flush()
				time.Sleep(short / 2)
			}
		}
	}))
	defer srv.Close()
	c := Client(Timeouts{ResponseHeader: short, Idle: short})
	get := func(path string) (string, error) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if _, err := get("/headers"); code(err) != CodeResponseHeader {
		t.Errorf("no headers: err = %v, want %s", err, CodeResponseHeader)
	}
	if body, err := get("/stall"); code(err) != CodeIdle || body != "first" {
		t.Errorf("stall: %q, err = %v, want what came and %s", body, err, CodeIdle)
	}
	if body, err := get("/slow"); err != nil || body != "xxxxxxxx" {
		t.Errorf("slow: %q, err = %v; each byte pushes the idle bound back", body, err)
	}
}

// TestTLSHandshakeBound: a server that accepts the connection and never
// answers the handshake is cut at the TLS bound.
func TestTLSHandshakeBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c := Client(Timeouts{TLSHandshake: 150 * time.Millisecond})
	start := time.Now()
	_, err = c.Get("https://" + ln.Addr().String() + "/")
	if code(err) != CodeTLSHandshake {
		t.Errorf("err = %v, want %s", err, CodeTLSHandshake)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("cut after %s", took)
	}
}

// TestCallerCancellationIsNotATimeout: the caller's own cancellation comes
// back as the context's error.
func TestCallerCancellationIsNotATimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := Client(Timeouts{}).Do(req)
	if !errors.Is(err, context.DeadlineExceeded) || code(err) != "" {
		t.Errorf("err = %v, want the caller's deadline", err)
	}
}

// TestWrapKeepsTheCallersClient: a caller's client gets the header and idle
// bounds and keeps its own transport.
func TestWrapKeepsTheCallersClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := Wrap(srv.Client(), Timeouts{Idle: 100 * time.Millisecond})
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	if code(err) != CodeIdle || !strings.Contains(err.Error(), "100ms") {
		t.Errorf("err = %v, want %s naming the bound", err, CodeIdle)
	}
}

// TestReadAllIsBounded: a whole body longer than MaxBody is refused.
func TestReadAllIsBounded(t *testing.T) {
	_, err := ReadAll(io.LimitReader(zeros{}, MaxBody+10))
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("err = %v, want ErrBodyTooLarge", err)
	}
	b, err := ReadAll(strings.NewReader("ok"))
	if err != nil || string(b) != "ok" {
		t.Errorf("%q, %v", b, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
