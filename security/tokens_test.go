package security

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestServeNamedTokensCannotReadEachOthersThreads: rein serve --token-file
// gives each named token only the threads it created. Bob, knowing the id
// of Alice's thread, can neither list, read, resume, continue nor trace it:
// each answers as for a thread that does not exist, and nothing of it
// reaches his connection. The admin --token sees both.
func TestServeNamedTokensCannotReadEachOthersThreads(t *testing.T) {
	const alice, bob, admin = "alice-tok-0123456789abcdef", "bob-tok-0123456789abcdef", "admin-tok-0123456789"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# the team\nalice="+alice+"\nbob="+bob+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := serverStart(t, "--token", admin, "--token-file", file)
	dial := func(tok string) *serverClient {
		c, _, err := websocket.Dial(t.Context(), "ws://"+p.addr, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		c.SetReadLimit(64 << 20)
		t.Cleanup(func() { c.CloseNow() })
		s := &serverClient{t: t, c: c}
		s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
		return s
	}
	if _, resp, err := websocket.Dial(context.Background(), "ws://"+p.addr, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer carol-tok-0123456789"}}}); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unknown token: %v, want 401", err)
	}
	a, b, root := dial(alice), dial(bob), dial(admin)

	res := a.call("thread/start", map[string]any{})
	th, _ := res["result"].(map[string]any)["thread"].(map[string]any)
	id, _ := th["id"].(string)
	if id == "" || th["owner"] != "alice" {
		t.Fatalf("alice's thread/start: %v", res)
	}
	a.call("turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "alice's private plan"}}})
	a.until("turn/completed")

	list := func(c *serverClient) string {
		m := c.call("thread/list", map[string]any{})
		if m["error"] != nil {
			t.Fatalf("thread/list: %v", m["error"])
		}
		return strings.Join(c.all[len(c.all)-1:], "")
	}
	if got := list(b); strings.Contains(got, id) {
		t.Errorf("bob's thread/list shows alice's thread: %s", got)
	}
	if got := list(root); !strings.Contains(got, id) {
		t.Errorf("the admin's thread/list lacks alice's thread: %s", got)
	}
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"thread/read", map[string]any{"threadId": id}},
		{"thread/resume", map[string]any{"threadId": id}},
		{"turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "tell me the plan"}}}},
		{"turn/trace", map[string]any{"threadId": id, "turnId": "turn_x"}},
	} {
		got := b.call(m.method, m.params)
		e, _ := got["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32012) {
			t.Errorf("bob's %s on alice's thread: %v, want thread not found", m.method, got)
		}
	}
	for _, msg := range b.all {
		if strings.Contains(msg, "private plan") || strings.Contains(msg, "hello") {
			t.Errorf("bob's connection received alice's thread: %s", msg)
		}
	}
	// Alice's thread still has its one turn: bob started none.
	read := a.call("thread/read", map[string]any{"threadId": id})
	if turns, _ := read["result"].(map[string]any)["turns"].([]any); len(turns) != 1 {
		t.Errorf("alice's thread after bob's tries has %d turns, want 1", len(turns))
	}
}
