package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/server"
)

// /readyz answers 200 while the node takes work, 503 while its store does
// not answer and once it drains, without credentials and without saying
// why beyond one word; /healthz stays 200 throughout.
func TestReadyzAnswers503WhileTheStoreIsDownOrTheNodeDrains(t *testing.T) {
	b := newBackend(t)
	var down atomic.Bool
	s := b.server(t, server.Config{Ready: func(context.Context) error {
		if down.Load() {
			return errors.New("dial tcp 10.0.0.5:5432: connection refused (password=hunter2)")
		}
		return nil
	}})
	hs := httptest.NewServer(s.Handler("secret"))
	t.Cleanup(hs.Close)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := noRedirect(nil).Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("ready node: /readyz %d %q, want 200 ok", code, body)
	}
	down.Store(true)
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != "not ready\n" {
		t.Errorf("store down: /readyz %d %q, want 503 saying nothing of the error", code, body)
	}
	down.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.sched.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != "draining\n" {
		t.Errorf("draining: /readyz %d %q, want 503 draining", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("draining: /healthz %d, want 200", code)
	}
}
