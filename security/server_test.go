package security

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// serverProc is a `rein serve --listen 127.0.0.1:0` process of a test.
type serverProc struct {
	addr string // host:port it listens on
	pid  int
	// open is the URL it says to open in a browser (with --token, a
	// one-time sign-in link).
	open string
}

// serverStart starts rein serve on a free loopback port with a scripted
// default model, in a home of its own, and returns it once it listens. The
// process is killed when the test ends.
func serverStart(t *testing.T, args ...string) serverProc {
	t.Helper()
	bin := reinBinary(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("rounds:\n  - text: hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "rein.db"),
		"--workspace", dir, "--model", "scripted:" + script}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addrc := make(chan [2]string, 1)
	exited := make(chan string, 1)
	go func() {
		// Reads the process's stderr until it exits (Cleanup kills it).
		var said strings.Builder
		var addr string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			said.WriteString(sc.Text() + "\n")
			if a, ok := strings.CutPrefix(sc.Text(), "rein: serving on ws://"); ok {
				addr = a
			}
			if u, ok := strings.CutPrefix(sc.Text(), "rein: open "); ok && addr != "" {
				addrc <- [2]string{addr, strings.TrimSuffix(u, " in a browser")}
			}
		}
		io.Copy(io.Discard, stderr)
		exited <- said.String()
	}()
	select {
	case a := <-addrc:
		return serverProc{addr: a[0], open: a[1], pid: cmd.Process.Pid}
	case said := <-exited:
		t.Fatalf("rein %s ended before listening:\n%s", strings.Join(all, " "), said)
	case <-time.After(60 * time.Second):
		t.Fatal("rein serve did not say where it listens")
	}
	return serverProc{}
}

// serverHandshake sends a WebSocket handshake with the given Host and
// Origin and returns the status and the body of a refusal.
func serverHandshake(t *testing.T, addr, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServerRefusesDNSRebinding: a web page the user visits rebinds its
// name to 127.0.0.1 and opens a WebSocket to the port; its Host and Origin
// carry its own name. A cross-site page sends its Origin. Both are refused;
// a local client (loopback Host, no Origin) and what --allowed-host and
// --allowed-origin name are served.
func TestServerRefusesDNSRebinding(t *testing.T) {
	p := serverStart(t)
	_, port, _ := strings.Cut(p.addr, ":")
	for _, tc := range []struct {
		host, origin string
		want         int
		says         string
	}{
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden, "--allowed-host"},
		{"evil.example:" + port, "", http.StatusForbidden, "--allowed-host"},
		{p.addr, "http://evil.example", http.StatusForbidden, "--allowed-origin"},
		{p.addr, "", http.StatusSwitchingProtocols, ""},
		{"localhost:" + port, "", http.StatusSwitchingProtocols, ""},
		{p.addr, "http://" + p.addr, http.StatusSwitchingProtocols, ""},
	} {
		if got, body := serverHandshake(t, p.addr, tc.host, tc.origin); got != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("Host %q Origin %q: %d %q, want %d saying %q", tc.host, tc.origin, got, body, tc.want, tc.says)
		}
	}

	allowed := serverStart(t, "--allowed-host", "rein.example", "--allowed-origin", "https://app.example")
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"rein.example", "", http.StatusSwitchingProtocols},
		{allowed.addr, "https://app.example", http.StatusSwitchingProtocols},
		{"evil.example", "", http.StatusForbidden},
		{allowed.addr, "http://evil.example", http.StatusForbidden},
	} {
		if got, body := serverHandshake(t, allowed.addr, tc.host, tc.origin); got != tc.want {
			t.Errorf("with --allowed-host/--allowed-origin: Host %q Origin %q: %d %q, want %d", tc.host, tc.origin, got, body, tc.want)
		}
	}
}

// serverClient is a WebSocket client of the tests: it reads only when
// asked to.
type serverClient struct {
	t  *testing.T
	c  *websocket.Conn
	id int
	// all is every message read, for the checks of what leaked.
	all []string
}

func serverDial(t *testing.T, addr string) *serverClient {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), "ws://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &serverClient{t: t, c: c}
}

// call sends a request and returns the raw response to it, keeping the
// notifications read meanwhile in all.
func (s *serverClient) call(method string, params any) map[string]any {
	s.t.Helper()
	s.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	defer cancel()
	if err := s.c.Write(ctx, websocket.MessageText, b); err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
	for {
		_, data, err := s.c.Read(ctx)
		if err != nil {
			s.t.Fatalf("%s: no answer: %v", method, err)
		}
		s.all = append(s.all, string(data))
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			s.t.Fatalf("%s: %q: %v", method, data, err)
		}
		if id, ok := m["id"].(float64); ok && int(id) == s.id {
			return m
		}
	}
}

// until reads, into all, until a notification of method comes (a read
// that times out closes the WebSocket: the deadline is a failure).
func (s *serverClient) until(method string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	defer cancel()
	for {
		_, data, err := s.c.Read(ctx)
		if err != nil {
			s.t.Fatalf("no %s: %v", method, err)
		}
		s.all = append(s.all, string(data))
		var m struct{ Method string }
		if json.Unmarshal(data, &m) == nil && m.Method == method {
			return
		}
	}
}

// TestServerRefusesAClientChosenFile: thread/start {"model":
// "scripted:/root/.ssh/id_ed25519"} made the server read the file and quote
// it back in the script's parse error (turn/completed, thread/read). The
// model is refused with -32602 and the file's contents appear nowhere.
func TestServerRefusesAClientChosenFile(t *testing.T) {
	p := serverStart(t)
	const secret = "S3CR3T-c0ffee42"
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"+secret+"\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := serverDial(t, p.addr)
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "attacker"}})
	m := c.call("thread/start", map[string]any{"model": "scripted:" + key})
	e, _ := m["error"].(map[string]any)
	if code, _ := e["code"].(float64); code != -32602 || !strings.Contains(fmt.Sprint(e["message"]), "file") {
		t.Errorf("thread/start with a file model: %v, want -32602 saying a client may not name a file", m)
	}
	if th, ok := m["result"].(map[string]any); ok {
		// Accepted: play the attack to its end, then look for the file.
		id := th["thread"].(map[string]any)["id"]
		c.call("turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "hi"}}})
		c.until("turn/completed")
		c.call("thread/read", map[string]any{"threadId": id})
	}
	c.call("thread/list", map[string]any{})
	for _, msg := range c.all {
		if strings.Contains(msg, secret) {
			t.Errorf("the server sent the file's contents: %s", msg)
		}
	}
}

// serverRSS returns the resident memory of a process in bytes.
func serverRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/PID/status")
	return 0
}

// serverSoak is how long the non-reading client attacks: 10 s by default,
// REIN_SERVER_SOAK (a duration, such as 60s) for the full run.
func serverSoak(t *testing.T) time.Duration {
	v := os.Getenv("REIN_SERVER_SOAK")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("REIN_SERVER_SOAK=%q: %v", v, err)
	}
	return d
}

// TestServerBoundsANonReadingClient: a client that sends requests and
// never reads grew the server from 52 MB to 10.6 GB in 60 s (the queue
// was bounded in messages, not bytes; each answer echoes the request's
// id). The server's memory stays bounded, and another client is served
// meanwhile.
func TestServerBoundsANonReadingClient(t *testing.T) {
	p := serverStart(t)
	// Idle: after a first client has come and gone.
	warm := serverDial(t, p.addr)
	warm.call("initialize", map[string]any{})
	warm.call("thread/list", map[string]any{})
	warm.c.Close(websocket.StatusNormalClosure, "")
	time.Sleep(500 * time.Millisecond)
	idle := serverRSS(t, p.pid)

	// A bound generous for a loaded CI machine; the benchmark's target is
	// 100 MB above idle. The attack stops as soon as it is passed, so an
	// unbounded server fails the test without taking the machine down.
	const limit = 256 << 20
	soak := serverSoak(t)
	ctx, stop := context.WithTimeout(t.Context(), soak)
	defer stop()
	var sent sync.WaitGroup
	var dials int
	sent.Add(1)
	go func() {
		// Sends until the soak ends, never reading; when the server
		// disconnects it (it stopped reading past the bound), it comes
		// back, as an attacker would.
		defer sent.Done()
		id := strings.Repeat("i", 1<<20)
		for ctx.Err() == nil {
			attacker, _, err := websocket.Dial(ctx, "ws://"+p.addr, nil)
			if err != nil {
				return
			}
			dials++
			for i := 0; ctx.Err() == nil; i++ {
				msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s-%d","method":"thread/list","params":{}}`, id, i)
				if err := attacker.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
					break
				}
			}
			attacker.CloseNow()
		}
	}()

	var peak int64
	other := serverDial(t, p.addr)
	other.call("initialize", map[string]any{})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	checked := false
	for ctx.Err() == nil {
		<-tick.C
		rss := serverRSS(t, p.pid) - idle
		peak = max(peak, rss)
		if rss > limit {
			stop()
			sent.Wait()
			t.Fatalf("the server grew by %d MB under a client that reads nothing (idle %d MB), past %d MB", rss>>20, idle>>20, limit>>20)
		}
		if !checked && peak > 8<<20 {
			// Another client is served while the attack goes on.
			start := time.Now()
			other.call("thread/list", map[string]any{})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("another client waited %v for an answer during the attack", d)
			}
			checked = true
		}
	}
	stop()
	sent.Wait()
	t.Logf("server RSS: idle %d MB, peak %d MB above idle over %v of a client that reads nothing (%d connections)", idle>>20, peak>>20, soak, dials)
	// Past the stall timeout (30 s) with the queue full, the server
	// disconnects the client, which came back.
	if soak > 45*time.Second && dials < 2 {
		t.Errorf("a client that read nothing for %v was never disconnected", soak)
	}
}
