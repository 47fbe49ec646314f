package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// checkRequest refuses, with 403, an HTTP request whose Host or Origin this
// server does not answer. It runs before anything else, the bearer token
// included, on every request and upgrade:
//
//   - Host must be a loopback name or address (localhost, 127.0.0.0/8, ::1,
//     with or without a port) or one of Config.AllowedHosts. A page that
//     rebinds its own name to 127.0.0.1 (DNS rebinding) reaches the port, but
//     its requests carry its name, not ours.
//   - Origin, when present, must be the server's own (the scheme and Host of
//     the request) or one of Config.AllowedOrigins: a browser sends it with
//     every cross-site request, so a page elsewhere cannot drive the agent
//     through the user's browser.
//
// Clients that are not browsers send no Origin and are not affected.
func (s *Server) checkRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			host, _ := splitHostPort(r.Host)
			http.Error(w, fmt.Sprintf("rein: Host %q is not allowed: this server answers only loopback names and addresses "+
				"(localhost, 127.0.0.0/8, ::1), so that a web page cannot reach it by rebinding its own name; "+
				"to allow this name, start the server with --allowed-host %s", clip(r.Host), clip(host)), http.StatusForbidden)
			return
		}
		for _, o := range r.Header.Values("Origin") {
			if !s.originAllowed(r, o) {
				http.Error(w, fmt.Sprintf("rein: Origin %q is not allowed: this server answers only pages of its own origin, "+
					"so that a web page elsewhere cannot drive it through your browser; "+
					"to allow pages from it, start the server with --allowed-origin %s", clip(o), clip(o)), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether host, a request's Host ("name", "name:port",
// "[::1]:port"), is loopback or allowed. An allowed host without a port
// allows every port; with one, only that port.
func (s *Server) hostAllowed(host string) bool {
	name, port := splitHostPort(host)
	if name == "" {
		return false
	}
	if isLoopback(name) {
		return true
	}
	for _, a := range s.c.AllowedHosts {
		an, ap := splitHostPort(a)
		if an != "" && strings.EqualFold(an, name) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// originAllowed reports whether o, a request's Origin, is the server's own
// origin (the request's scheme and Host, which hostAllowed has checked) or
// an allowed one. "null", which sandboxed pages and files send, is neither
// unless allowed.
func (s *Server) originAllowed(r *http.Request, o string) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if strings.EqualFold(o, scheme+"://"+r.Host) {
		return true
	}
	for _, a := range s.c.AllowedOrigins {
		if a != "" && strings.EqualFold(strings.TrimSuffix(a, "/"), o) {
			return true
		}
	}
	return false
}

// splitHostPort splits "name:port", "[v6]:port", "name" or "v6" into the
// name (without brackets) and the port ("" when none).
func splitHostPort(hostport string) (name, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
}

// clip shortens what a client sent to quote it back in an error.
func clip(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// CheckAllowed checks the allowed hosts and origins as New does, so that a
// command can refuse a mistaken flag before it starts anything.
func CheckAllowed(hosts, origins []string) error {
	for _, h := range hosts {
		if err := checkAllowedHost(h); err != nil {
			return err
		}
	}
	for _, o := range origins {
		if err := checkAllowedOrigin(o); err != nil {
			return err
		}
	}
	return nil
}

// checkAllowedHost checks an allowed host as given: a name or address,
// with an optional port, not a URL.
func checkAllowedHost(h string) error {
	name, _ := splitHostPort(h)
	if name == "" || strings.ContainsAny(h, "/ ") {
		return fmt.Errorf("server: allowed host %q: give a host name or address, optionally with :PORT, such as rein.example or rein.example:8765", h)
	}
	return nil
}

// checkAllowedOrigin checks an allowed origin as given: scheme://host with
// an optional port, nothing after it, as browsers send it.
func checkAllowedOrigin(o string) error {
	scheme, rest, ok := strings.Cut(strings.TrimSuffix(o, "/"), "://")
	if !ok || scheme == "" || rest == "" || strings.ContainsAny(rest, "/?# ") {
		return fmt.Errorf("server: allowed origin %q: give scheme://host[:port], such as https://rein.example, as a browser sends it in Origin", o)
	}
	return nil
}
