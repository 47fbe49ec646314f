package server_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
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
