package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinhq/rein/server"
)

// TestAllowedHostsAndOrigins: --allowed-host and --allowed-origin let in
// the names and pages the user chose, and only those.
func TestAllowedHostsAndOrigins(t *testing.T) {
	b := newBackend(t)
	s := b.server(t, server.Config{
		AllowedHosts:   []string{"rein.example", "pinned.example:8443"},
		AllowedOrigins: []string{"https://app.example", "http://127.0.0.1:5173/"},
	})
	hs := httptest.NewServer(s.Handler(""))
	defer hs.Close()
	port := hs.Listener.Addr().String()[strings.LastIndexByte(hs.Listener.Addr().String(), ':')+1:]
	own := "127.0.0.1:" + port
	for _, tc := range []hostCase{
		{"allowed host, any port", "/", "rein.example:" + port, "", http.StatusSwitchingProtocols, ""},
		{"allowed host and port", "/", "pinned.example:8443", "", http.StatusSwitchingProtocols, ""},
		{"allowed origin", "/", own, "https://app.example", http.StatusSwitchingProtocols, ""},
		{"allowed origin given with a slash", "/", own, "http://127.0.0.1:5173", http.StatusSwitchingProtocols, ""},
		{"allowed host, another port", "/", "pinned.example:9", "", http.StatusForbidden, "--allowed-host"},
		{"another host", "/", "evil.example", "", http.StatusForbidden, "--allowed-host"},
		{"another origin", "/", own, "https://app.example.evil", http.StatusForbidden, "--allowed-origin"},
	} {
		tc.run(t, hs.URL)
	}
}

// TestAllowedHostsAndOriginsAreChecked: a flag given as a URL where a
// name is wanted, or a name where an origin is, is an error at start.
func TestAllowedHostsAndOriginsAreChecked(t *testing.T) {
	b := newBackend(t)
	for _, c := range []server.Config{
		{Sessions: b.sched, AllowedHosts: []string{"http://rein.example"}},
		{Sessions: b.sched, AllowedHosts: []string{""}},
		{Sessions: b.sched, AllowedOrigins: []string{"app.example"}},
		{Sessions: b.sched, AllowedOrigins: []string{"https://app.example/path"}},
	} {
		if _, err := server.New(c); err == nil {
			t.Errorf("New(%q, %q) accepted", c.AllowedHosts, c.AllowedOrigins)
		}
	}
}
