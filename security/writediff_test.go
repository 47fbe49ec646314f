package security

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
)

// TestWriteFileDiffKeepsNoSecret attacks the diff write_file gives the UIs
// when it replaces a file: the old db.conf holds a database password from the
// environment, one with characters JSON escapes (<, >, &). The diff is kept
// as JSON (the result's Meta), where the password was written escaped, so
// the mask of the JSON text missed it: the store and the --events file held
// it, escaped, and anyone decoding them read it. Neither form may be found.
func TestWriteFileDiffKeepsNoSecret(t *testing.T) {
	bin := reinBinary(t)
	const password = "Pg<pass>&3c8e1a9f"
	escaped, _ := json.Marshal(password)
	forms := []string{password, strings.Trim(string(escaped), `"`)}

	mock := testkit.NewChatServer(t,
		testkit.Round{Calls: []testkit.MockCall{{ID: "w1", Name: "write_file", Args: `{"path":"db.conf","content":"password = from-vault\n"}`}}},
		testkit.Round{Text: "done"},
	)
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".config", "rein")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "[providers.mock]\nprotocol = \"openai-chat\"\nbase_url = \"" + mock.BaseURL() + "\"\nkey_env = \"MOCKPROV\"\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	old := "password = " + password + "\ndebug = 1\n"
	if err := os.WriteFile(filepath.Join(ws, "db.conf"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	events := filepath.Join(t.TempDir(), "events.jsonl")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--json", "--db", db, "--events", events,
		"--model", "mock:gpt-test", "--workspace", ws, "rotate the password")
	cmd.Env = redactEnv(t, home, "MOCKPROV=mockprov-4f9a2c7e1b8d", "DB_PASSWORD="+password)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rein run: %v\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "db.conf")); string(b) != "password = from-vault\n" {
		t.Fatalf("write_file did not run: db.conf is %q\nstdout: %s", b, stdout.String())
	}
	places := map[string]string{"--json output": stdout.String(), "stderr": stderr.String()}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	places["--events file"] = string(b)
	if !strings.Contains(string(b), "from-vault") {
		t.Errorf("the events carry no diff of the rewrite; did write_file give one?\n%.2000s", b)
	}
	files, _ := filepath.Glob(db + "*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The undo entry keeps the file as it was, byte for byte, for
		// /undo to restore it: the one place the old content belongs.
		places["store "+filepath.Base(f)] = strings.ReplaceAll(string(b), old, "")
	}
	for where, text := range places {
		for _, s := range forms {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("the password (as %q) leaked into the %s: %q", s, where, text[max(0, i-300):i+40])
			}
		}
	}
}
