package server

import (
	"context"
	"net/http"
	"time"
)

// readyTimeout bounds the readiness check of the store (Config.Ready).
const readyTimeout = 2 * time.Second

// readyz answers a load balancer whether to send this node new work: 503
// while the node drains (it is leaving: session.Scheduler.Drain) or while
// Config.Ready fails (its store does not answer), 200 otherwise. Like
// /healthz it is public and says nothing else: the reason stays in the
// node's log, not in the answer.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if s.c.Sessions.Draining() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	if s.c.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if s.c.Ready(ctx) != nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
	}
	w.Write([]byte("ok\n"))
}
