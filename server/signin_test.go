package server_test

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/reinhq/rein/server"
)

// signinServer serves a server with token "secret" on loopback and returns
// its URL and the server.
func signinServer(t *testing.T) (string, *server.Server) {
	t.Helper()
	b := newBackend(t)
	s := b.server(t, server.Config{})
	hs := httptest.NewServer(s.Handler("secret"))
	t.Cleanup(hs.Close)
	return hs.URL, s
}

// noRedirect is a client that reports redirects instead of following them.
func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signInURL mints a sign-in URL for the test server at base.
func signInURL(t *testing.T, s *server.Server, base string) string {
	t.Helper()
	u, _ := url.Parse(base)
	addr, err := net.ResolveTCPAddr("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return s.SignInURL(addr, "secret")
}

func TestHealthAndPageAnswerWithoutCredentials(t *testing.T) {
	base, _ := signinServer(t)
	for _, tc := range []struct{ path, want, ctype string }{
		{"/healthz", "ok\n", "text/plain"},
		{"/", "<title>rein</title>", "text/html"},
		{"/assets/app.js", "JSON-RPC", "text/javascript"},
	} {
		resp, err := noRedirect(nil).Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.want) || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("GET %s without credentials: %d %s %.80q, want 200 %s with %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.ctype, tc.want)
		}
		if tc.path != "/healthz" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: no content security policy: %q", tc.path, resp.Header.Get("Content-Security-Policy"))
		}
	}
	resp, err := noRedirect(nil).Get(base + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %d, want 404", resp.StatusCode)
	}
}

func TestTheSignInURLSetsAStrictHttpOnlyCookieOnce(t *testing.T) {
	base, s := signinServer(t)
	ws := "ws" + strings.TrimPrefix(base, "http")
	link := signInURL(t, s, base)
	if !strings.Contains(link, "/signin?code=") {
		t.Fatalf("sign-in URL %q has no code", link)
	}

	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}

	// The link works once.
	again, err := noRedirect(nil).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized || again.Header.Get("Set-Cookie") != "" {
		t.Errorf("the link opened twice: %d, cookie %q; want 401 without a cookie", again.StatusCode, again.Header.Get("Set-Cookie"))
	}

	// The cookie opens the WebSocket; a made-up one does not.
	cookie := jar.Cookies(mustURL(t, base))
	if len(cookie) != 1 {
		t.Fatalf("cookies after sign-in: %v", cookie)
	}
	conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {cookie[0].String()}}})
	if err != nil {
		t.Fatalf("the session cookie was refused: %v", err)
	}
	w := wsWire{conn}
	(&client{t: t, w: w}).initialize()
	w.close()
	forged := &http.Cookie{Name: cookie[0].Name, Value: "forged"}
	if _, resp, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {forged.String()}}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %v, want 401", err)
	}

	// A cross-site page cannot use it: the Origin check comes first, and a
	// rebound name is refused with it too.
	for _, tc := range []struct{ name, host, origin string }{
		{"cross-site origin", "", "http://evil.example"},
		{"rebinding host", "evil.example", ""},
	} {
		h := http.Header{"Cookie": {cookie[0].String()}}
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		opts := &websocket.DialOptions{HTTPHeader: h, Host: tc.host}
		if _, resp, err := websocket.Dial(t.Context(), ws, opts); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with a valid cookie: %v, want 403", tc.name, err)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTheTokenRidesInTheSubprotocol(t *testing.T) {
	base, _ := signinServer(t)
	ws := "ws" + strings.TrimPrefix(base, "http")
	enc := func(tok string) string {
		return server.BearerSubprotocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(tok))
	}

	conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{Subprotocols: []string{server.Subprotocol, enc("secret")}})
	if err != nil {
		t.Fatalf("the token as a subprotocol was refused: %v", err)
	}
	if got := conn.Subprotocol(); got != server.Subprotocol {
		t.Errorf("selected subprotocol %q, want %q (never the token)", got, server.Subprotocol)
	}
	w := wsWire{conn}
	(&client{t: t, w: w}).initialize()
	w.close()

	for _, bad := range []string{enc("wrong"), server.BearerSubprotocolPrefix + "%%%", server.Subprotocol} {
		if _, resp, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{Subprotocols: []string{server.Subprotocol, bad}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("subprotocol %q: %v, want 401", bad, err)
		}
	}
}

func TestTheSignInFormTakesTheToken(t *testing.T) {
	base, _ := signinServer(t)
	for _, tc := range []struct {
		token  string
		status int
		cookie bool
	}{
		{"secret", http.StatusSeeOther, true},
		{"wrong", http.StatusUnauthorized, false},
		{"", http.StatusUnauthorized, false},
	} {
		resp, err := noRedirect(nil).PostForm(base+"/signin", url.Values{"token": {tc.token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || (resp.Header.Get("Set-Cookie") != "") != tc.cookie {
			t.Errorf("POST /signin token %q: %d cookie %q, want %d cookie %v", tc.token, resp.StatusCode, resp.Header.Get("Set-Cookie"), tc.status, tc.cookie)
		}
	}
	// A cross-site form post is refused before the token is looked at.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/signin", strings.NewReader("token=secret"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := noRedirect(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site sign-in post: %d, want 403", resp.StatusCode)
	}
}

func TestLoopbackWithoutATokenNeedsNoSignIn(t *testing.T) {
	b := newBackend(t)
	s := b.server(t, server.Config{})
	hs := httptest.NewServer(s.Handler(""))
	defer hs.Close()
	addr, _ := net.ResolveTCPAddr("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if got := s.SignInURL(addr, ""); got != hs.URL+"/" {
		t.Errorf("SignInURL without a token = %q, want the page %q", got, hs.URL+"/")
	}
	conn, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(hs.URL, "http"), &websocket.DialOptions{Subprotocols: []string{server.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	w := wsWire{conn}
	(&client{t: t, w: w}).initialize()
	w.close()
}
