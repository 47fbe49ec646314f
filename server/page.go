package server

import (
	"net/http"
	"strings"

	"github.com/reinhq/rein/web"
)

// routes is what the server answers behind the Host and Origin checks:
// the health and readiness checks and signing in to anyone; the page's files to anyone
// (they hold nothing private: the page learns everything over the
// WebSocket); the WebSocket only with credentials when there is a token or named
// tokens, as whose credentials they are.
func (s *Server) routes(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /signin", s.signIn)
	mux.HandleFunc("POST /signin", func(w http.ResponseWriter, r *http.Request) { s.signInToken(w, r, token) })
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		if isUpgrade(r) {
			var who principal
			if s.needsCredentials(token) {
				var ok bool
				if who, ok = s.authenticate(r, token); !ok {
					w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
					http.Error(w, "rein: credentials are required: send Authorization: Bearer TOKEN, or sign in with the URL rein serve printed", http.StatusUnauthorized)
					return
				}
			}
			s.serveWS(w, r, who)
			return
		}
		if web.Has(r.URL.Path) {
			web.Serve(w, r)
			return
		}
		http.NotFound(w, r)
	})
	return mux
}

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		if strings.EqualFold(strings.TrimSpace(v), "websocket") {
			return true
		}
	}
	return false
}
