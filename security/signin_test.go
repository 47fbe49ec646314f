package security

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestServeSignInLinkWorksOnce: `rein serve --token` prints a one-time
// sign-in link. Opening it sets an HttpOnly, SameSite=Strict cookie that
// opens the WebSocket; the link does not work a second time, and without
// the cookie or the token the WebSocket is refused while /healthz and the
// page answer anyone.
func TestServeSignInLinkWorksOnce(t *testing.T) {
	p := serverStart(t, "--token", "s3cret-token")
	if !strings.HasPrefix(p.open, "http://"+p.addr+"/signin?code=") {
		t.Fatalf("rein serve said to open %q, want a sign-in link on %s", p.open, p.addr)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string) *http.Response {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/healthz", "/"} {
		if resp := get("http://" + p.addr + path); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without credentials: %d, want 200", path, resp.StatusCode)
		}
	}
	ws := "ws://" + p.addr + "/"
	if _, resp, err := websocket.Dial(t.Context(), ws, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a WebSocket without credentials: %v, want 401", err)
	}

	resp := get(p.open)
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("opening the link: %d, cookies %v; want 303 with one HttpOnly SameSite=Strict cookie", resp.StatusCode, cookies)
	}
	conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {cookies[0].String()}}})
	if err != nil {
		t.Fatalf("the WebSocket with the session cookie: %v", err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	if again := get(p.open); again.StatusCode != http.StatusUnauthorized || len(again.Cookies()) != 0 {
		t.Errorf("the link opened a second time: %d, cookies %v; want 401 and none", again.StatusCode, again.Cookies())
	}
}
