package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Signing in from a browser. A browser's WebSocket cannot send an
// Authorization header, so a server with a token also accepts:
//
//   - a session cookie, set by opening a one-time sign-in URL that rein
//     serve prints (as Jupyter does): HttpOnly, so the page's scripts
//     never hold it, and SameSite=Strict, so no other site's page sends it;
//   - the token in Sec-WebSocket-Protocol, the one header a browser's
//     WebSocket sends: the client offers "rein.v1" and
//     "rein.bearer.BASE64URL(TOKEN)", the server selects "rein.v1" and never
//     echoes the token.
//
// The Host and Origin checks run before all of it (checkRequest).

// Session limits.
const (
	// sessionTTL is how long a browser stays signed in.
	sessionTTL = 7 * 24 * time.Hour
	// codeTTL is how long a sign-in URL may wait to be opened.
	codeTTL = 24 * time.Hour
	// maxSessions bounds the sessions (and unused codes) kept in memory;
	// the oldest go first.
	maxSessions = 1024
	// maxSessionsEach bounds the sessions of one principal: past it, its
	// own oldest goes, so that signing in again and again (anyone with a
	// named token can) never signs anyone else out.
	maxSessionsEach = 32
)

// Subprotocols of the WebSocket endpoint.
const (
	// Subprotocol is what the server selects when a client offers it.
	Subprotocol = "rein.v1"
	// BearerSubprotocolPrefix, followed by the token in unpadded
	// base64url, carries the token from a browser.
	BearerSubprotocolPrefix = "rein.bearer."
)

// signins holds the one-time sign-in codes and the sessions they opened,
// by the SHA-256 of their secret (a leaked map leaks no secret, and a
// lookup compares hashes).
type signins struct {
	mu       sync.Mutex
	codes    map[[32]byte]signin // unused codes
	sessions map[[32]byte]signin // sessions
	now      func() time.Time
}

// signin is a code or session: when it expires and who it signs in.
type signin struct {
	exp time.Time
	who principal
}

func newSignins() *signins {
	return &signins{codes: map[[32]byte]signin{}, sessions: map[[32]byte]signin{}, now: time.Now}
}

// secret returns 32 random bytes in base64url.
func secret() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// mint returns a new one-time code that signs in the admin.
func (s *signins) mint() string {
	c := secret()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(s.codes, sha256.Sum256([]byte(c)), signin{exp: s.now().Add(codeTTL)})
	return c
}

// add puts k in m, first dropping the expired entries and, at a bound, the
// entry that expires first: v's principal's own at maxSessionsEach, any at
// maxSessions. s.mu is held.
func (s *signins) add(m map[[32]byte]signin, k [32]byte, v signin) {
	now := s.now()
	mine := 0
	for h, e := range m {
		if !now.Before(e.exp) {
			delete(m, h)
		} else if e.who == v.who {
			mine++
		}
	}
	if mine >= maxSessionsEach {
		dropFirst(m, func(e signin) bool { return e.who == v.who })
	} else if len(m) >= maxSessions {
		dropFirst(m, func(signin) bool { return true })
	}
	m[k] = v
}

// dropFirst deletes the entry of m that expires first among those which
// selects.
func dropFirst(m map[[32]byte]signin, which func(signin) bool) {
	var oldest [32]byte
	var first time.Time
	for h, e := range m {
		if which(e) && (first.IsZero() || e.exp.Before(first)) {
			oldest, first = h, e.exp
		}
	}
	delete(m, oldest)
}

// redeem spends a code and returns a new session's secret; false when the
// code is unknown, used or expired.
func (s *signins) redeem(code string) (string, bool) {
	h := sha256.Sum256([]byte(code))
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.codes[h]
	if !ok {
		return "", false
	}
	delete(s.codes, h)
	if !s.now().Before(c.exp) {
		return "", false
	}
	return s.openLocked(c.who), true
}

// open returns a new session's secret, signing in who.
func (s *signins) open(who principal) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openLocked(who)
}

// openLocked is open with s.mu held.
func (s *signins) openLocked(who principal) string {
	sess := secret()
	s.add(s.sessions, sha256.Sum256([]byte(sess)), signin{exp: s.now().Add(sessionTTL), who: who})
	return sess
}

// valid returns who the live session sess signs in; false when it is
// unknown or expired.
func (s *signins) valid(sess string) (principal, bool) {
	if sess == "" {
		return principal{}, false
	}
	h := sha256.Sum256([]byte(sess))
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[h]
	if !ok || !s.now().Before(e.exp) {
		return principal{}, false
	}
	return e.who, true
}

// cookieName is the session cookie's name for the server on r's port.
// Cookies do not keep to a port, so two servers on one host (or another
// program on localhost) would otherwise see each other's session.
func cookieName(r *http.Request) string {
	_, port := splitHostPort(r.Host)
	if port == "" {
		return "rein_session"
	}
	return "rein_session_" + port
}

// SignInURL returns a URL that signs a browser in once, for a server
// listening on addr (the address ListenAndServe reports): opening it sets
// the session cookie and shows the page. Each call mints a new code, valid
// for one use within a day. A server without a token needs no sign-in on
// loopback; the URL then simply opens the page.
func (s *Server) SignInURL(addr net.Addr, token string) string {
	host := addr.String()
	if h, p, err := net.SplitHostPort(host); err == nil {
		ip := net.ParseIP(h)
		if ip != nil && ip.IsUnspecified() {
			// Listening on every interface: loopback is one of them and is
			// always allowed.
			h = "127.0.0.1"
		}
		host = net.JoinHostPort(h, p)
	}
	if token == "" {
		return "http://" + host + "/"
	}
	return "http://" + host + "/signin?code=" + s.signins.mint()
}

// signIn serves GET /signin?code=CODE: a valid, unused code sets the
// session cookie and sends the browser to the page; the code is spent.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.signins.redeem(r.URL.Query().Get("code"))
	if !ok {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "rein: this sign-in link is unknown, used or expired; restart rein serve for a new one, or connect with the token", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	s.setSession(w, r, sess)
	// Replace the URL with the code in it: it stays out of the history.
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInToken serves POST /signin with the form field token: the page's
// sign-in form, for a browser that has no sign-in URL. The right token (the
// admin's or a named one) sets the session cookie as a sign-in URL does,
// signing in whose token it is; the page never keeps the token.
func (s *Server) signInToken(w http.ResponseWriter, r *http.Request, token string) {
	w.Header().Set("Cache-Control", "no-store")
	if !s.needsCredentials(token) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	who, ok := s.whoseToken(r.PostFormValue("token"), token)
	if !ok {
		http.Error(w, "rein: that is not this server's token", http.StatusUnauthorized)
		return
	}
	s.setSession(w, r, s.signins.open(who))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// setSession sets the session cookie: HttpOnly (no script reads it),
// SameSite=Strict (no other site's request carries it), Secure over TLS,
// ours or a proxy's.
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, sess string) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(r), Value: sess, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || forwardedHTTPS(r),
	})
}

// forwardedHTTPS reports whether a proxy says r reached it over https
// (X-Forwarded-Proto, or Forwarded's proto). Trusting it is safe here: a
// client that lies only makes its own cookie Secure.
func forwardedHTTPS(r *http.Request) bool {
	if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); strings.EqualFold(strings.TrimSpace(p), "https") {
		return true
	}
	first, _, _ := strings.Cut(r.Header.Get("Forwarded"), ",")
	for kv := range strings.SplitSeq(first, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if strings.EqualFold(k, "proto") && strings.EqualFold(strings.Trim(v, `"`), "https") {
			return true
		}
	}
	return false
}

// subprotocolToken returns the token a client offered as a subprotocol.
func subprotocolToken(r *http.Request) (string, bool) {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			p = strings.TrimSpace(p)
			if enc, ok := strings.CutPrefix(p, BearerSubprotocolPrefix); ok {
				b, err := base64.RawURLEncoding.DecodeString(enc)
				if err != nil {
					return "", false
				}
				return string(b), true
			}
		}
	}
	return "", false
}
