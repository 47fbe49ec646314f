package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinhq/rein/server"
)

// upgrade sends a WebSocket handshake (or a plain GET of path) with the
// given Host and Origin and returns the status and the body.
func upgrade(t *testing.T, url, path, host, origin, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if path == "/" {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// hostCase is a request with a Host and an Origin, and what it gets.
type hostCase struct {
	name, path, host, origin string
	want                     int
	says                     string
}

func (tc hostCase) run(t *testing.T, url string) {
	t.Run(tc.name, func(t *testing.T) {
		got, body := upgrade(t, url, tc.path, tc.host, tc.origin, "")
		if got != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("Host %q Origin %q: %d %q, want %d saying %q", tc.host, tc.origin, got, body, tc.want, tc.says)
		}
	})
}

// TestHostAndOriginAreChecked: a page that rebinds its own name to
// 127.0.0.1 (DNS rebinding) reaches the port with its own name in Host and
// Origin; a page elsewhere sends its Origin. Both are refused with 403 on
// every request, saying which flag allows them; loopback names, non-browser
// clients (no Origin) and what the server allows are served.
func TestHostAndOriginAreChecked(t *testing.T) {
	b := newBackend(t)
	s := b.server(t, server.Config{})
	hs := httptest.NewServer(s.Handler(""))
	defer hs.Close()
	port := hs.Listener.Addr().String()[strings.LastIndexByte(hs.Listener.Addr().String(), ':')+1:]
	own := "127.0.0.1:" + port

	for _, tc := range []hostCase{
		{"loopback address", "/", own, "", http.StatusSwitchingProtocols, ""},
		{"localhost", "/", "localhost:" + port, "", http.StatusSwitchingProtocols, ""},
		{"localhost without a port", "/", "LocalHost", "", http.StatusSwitchingProtocols, ""},
		{"another loopback address", "/", "127.8.9.10:" + port, "", http.StatusSwitchingProtocols, ""},
		{"IPv6 loopback", "/", "[::1]:" + port, "", http.StatusSwitchingProtocols, ""},
		{"own origin", "/", own, "http://" + own, http.StatusSwitchingProtocols, ""},
		{"rebound name", "/", "evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden, "--allowed-host evil.example"},
		{"rebound name, no origin", "/", "evil.example:" + port, "", http.StatusForbidden, "--allowed-host evil.example"},
		{"rebound name, health", "/healthz", "evil.example:" + port, "", http.StatusForbidden, "--allowed-host"},
		{"a name ending in localhost", "/", "localhost.evil.example:" + port, "", http.StatusForbidden, "--allowed-host"},
		{"a cross-site page", "/", own, "http://evil.example", http.StatusForbidden, "--allowed-origin http://evil.example"},
		{"a cross-site page, health", "/healthz", own, "http://evil.example", http.StatusForbidden, "--allowed-origin"},
		{"another local port", "/", own, "http://127.0.0.1:3000", http.StatusForbidden, "--allowed-origin"},
		{"another scheme", "/", own, "https://" + own, http.StatusForbidden, "--allowed-origin"},
		{"a sandboxed page", "/", own, "null", http.StatusForbidden, "--allowed-origin"},
	} {
		tc.run(t, hs.URL)
	}

	// The token does not let a rebound name in, and the checks come first.
	ts := httptest.NewServer(s.Handler("secret"))
	defer ts.Close()
	if got, body := upgrade(t, ts.URL, "/", "evil.example", "", "secret"); got != http.StatusForbidden {
		t.Errorf("a rebound name with the token: %d %q, want 403", got, body)
	}
	if got, _ := upgrade(t, ts.URL, "/", "localhost", "", "secret"); got != http.StatusSwitchingProtocols {
		t.Errorf("localhost with the token: %d, want 101", got)
	}
}
