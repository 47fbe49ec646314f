package server_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestANamedTokenCannotSignOthersOut: sessions are kept in memory up to a
// bound, the oldest dropped first. A teammate signing in with the form
// over and over must drop only their own older sessions, never the
// admin's browser (nor another teammate's).
func TestANamedTokenCannotSignOthersOut(t *testing.T) {
	b := newBackend(t)
	base, _ := namedServer(t, b)
	ws := "ws" + base[len("http"):]
	signIn := func(tok string) *http.Cookie {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		resp, err := noRedirect(jar).PostForm(base+"/signin", url.Values{"token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cs := jar.Cookies(mustURL(t, base))
		if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 {
			t.Fatalf("POST /signin: %d %v", resp.StatusCode, cs)
		}
		return cs[0]
	}
	admin := signIn("secret")
	alice := signIn(aliceToken)
	for range 1100 {
		signIn(bobToken)
	}
	for who, c := range map[string]*http.Cookie{"the admin": admin, "alice": alice} {
		conn, resp, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {c.String()}}})
		if err != nil {
			t.Errorf("%s's session after bob signed in 1,100 times: %v (%v)", who, err, resp.Status)
			continue
		}
		conn.CloseNow()
	}
}

// TestBehindATLSProxyTheSessionCookieIsSecure: a proxy that ends TLS
// (docs/deploy.md) says so in X-Forwarded-Proto; the cookie it relays must
// be Secure, or the browser sends the session in clear text to any
// http:// address of the name (the proxy's redirect to https included).
// Without TLS anywhere it cannot be: a browser drops a Secure cookie an
// http:// page sets.
func TestBehindATLSProxyTheSessionCookieIsSecure(t *testing.T) {
	base, s := signinServer(t)
	for _, tc := range []struct {
		name   string
		header http.Header
		form   bool
		secure bool
	}{
		{"sign-in URL via https proxy", http.Header{"X-Forwarded-Proto": {"https"}}, false, true},
		{"form via https proxy", http.Header{"X-Forwarded-Proto": {"https"}}, true, true},
		{"sign-in URL over plain http", nil, false, false},
		{"form over plain http", nil, true, false},
	} {
		var req *http.Request
		if tc.form {
			req, _ = http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"token": {"secret"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, _ = http.NewRequest(http.MethodGet, signInURL(t, s, base), nil)
		}
		for k, v := range tc.header {
			req.Header[k] = v
		}
		resp, err := noRedirect(nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		set := resp.Header.Get("Set-Cookie")
		if set == "" {
			t.Fatalf("%s: no cookie (%d)", tc.name, resp.StatusCode)
		}
		if got := strings.Contains(set, "; Secure"); got != tc.secure {
			t.Errorf("%s: Set-Cookie %q, Secure %v, want %v", tc.name, set, got, tc.secure)
		}
	}
}
