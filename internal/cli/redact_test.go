package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/redact"
)

// redactSecrets are a key under a variable the config file names (no
// secret-looking name, no token shape: only the config says it is a key),
// a provider key in its usual variable, and a header value of the config.
var redactSecrets = []string{"local-llm-credential-77", "sk-proj-Rr5Tt7Uu9Vv1Ww3Xx5Yy7", "hdr-secret-value-99"}

// writeRedactConfig writes a config file naming LOCAL_LLM as a provider's
// key variable and a secret header, and sets the environment's keys.
func writeRedactConfig(t *testing.T) {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `[providers.local]
protocol = "openai-chat"
base_url = "http://127.0.0.1:9/v1"
key_env  = "LOCAL_LLM"
headers  = { "X-Api-Key" = "hdr-secret-value-99" }
`
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCAL_LLM", redactSecrets[0])
	t.Setenv("OPENAI_API_KEY", redactSecrets[1])
}

// TestRunRedactsConfiguredKeys pins the wiring of rein run: a tool result
// holding the configured keys (a workspace file read with read_file)
// reaches neither the --json output nor the store.
func TestRunRedactsConfiguredKeys(t *testing.T) {
	clearKeys(t)
	writeRedactConfig(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(strings.Join(redactSecrets, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `rounds:
  - calls:
      - {name: read_file, args: {path: notes.txt}}
  - text: done
`)
	db := filepath.Join(t.TempDir(), "rein.db")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--model", "scripted:"+script, "--workspace", ws, "read the notes")
	if code != ExitCompleted {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, redact.Mask) {
		t.Errorf("no mask in the output; did read_file run?\n%s", stdout)
	}
	files, _ := filepath.Glob(db + "*")
	if len(files) == 0 {
		t.Fatal("no store written")
	}
	for _, s := range redactSecrets {
		if strings.Contains(stdout, s) {
			t.Errorf("%s in the --json output", s)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), s) {
				t.Errorf("%s in the store (%s)", s, filepath.Base(f))
			}
		}
	}
}

func TestConfiguredSecrets(t *testing.T) {
	clearKeys(t)
	writeRedactConfig(t)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(agent.NewSecrets(cfg).Values(os.Getenv), "\n")
	for _, s := range redactSecrets {
		if !strings.Contains(got, s) {
			t.Errorf("secrets lack %s: %q", s, got)
		}
	}
}

// lockedBuffer is what rein serve wrote, read after the server exits.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeRedactsConfiguredKeys pins the wiring of rein serve (and chat,
// which runs its threads the same way): the notifications and the store
// never hold a configured key a tool returned.
func TestServeRedactsConfiguredKeys(t *testing.T) {
	clearKeys(t)
	writeRedactConfig(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Join(redactSecrets, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `rounds:
  - calls:
      - {name: read_file, args: {path: notes.txt}}
  - text: done
`)
	db := filepath.Join(t.TempDir(), "rein.db")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		done <- mainIO(context.Background(), []string{"serve", "--stdio", "--model", "scripted:" + script, "--db", db, "--workspace", dir}, inR, outW, &errb)
		outW.Close()
	}()
	raw := &lockedBuffer{}
	c := &rpcClient{t: t, in: inW, lines: make(chan map[string]any, 256)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(io.TeeReader(outR, raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.lines <- m
			}
		}
	}()
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "read the notes"}}})
	c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	c.call("thread/read", map[string]any{"threadId": th["id"]})
	inW.Close()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
	out := raw.String()
	if !strings.Contains(out, redact.Mask) {
		t.Errorf("no mask in the notifications; did read_file run?\n%s", out)
	}
	files, _ := filepath.Glob(db + "*")
	for _, s := range redactSecrets {
		if strings.Contains(out, s) {
			t.Errorf("%s in the server's output", s)
		}
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), s) {
				t.Errorf("%s in the store (%s)", s, filepath.Base(f))
			}
		}
	}
}
