package security

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/redact"
)

// redactEnv is a clean environment for the rein binary: a home, config and
// data of the test's own, no provider keys but those given.
func redactEnv(t *testing.T, home string, extra ...string) []string {
	t.Helper()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"LANG=C.UTF-8",
	}
	return append(env, extra...)
}

// TestRedactKeysNeverLeaveThroughAToolResult attacks as a hostile
// repository would: a workspace file holds the configured provider's key
// (under a variable whose name says nothing of a key: only the config file
// knows), a database password from the environment and a GitHub token, and
// the model is made to read it. None of them may reach the provider (any
// request body), the --json output or the store.
func TestRedactKeysNeverLeaveThroughAToolResult(t *testing.T) {
	bin := reinBinary(t)
	const (
		providerKey = "mockprov-4f9a2c7e1b8d"
		dbPassword  = "Pg-pass-3c8e1a9f"
		githubToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	)
	secrets := []string{providerKey, dbPassword, githubToken}

	mock := testkit.NewChatServer(t,
		testkit.Round{Calls: []testkit.MockCall{{ID: "c1", Name: "read_file", Args: `{"path":"notes.txt"}`}}},
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
	notes := "provider: " + providerKey + "\ndb: " + dbPassword + "\ngithub: " + githubToken + "\n"
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	events := filepath.Join(t.TempDir(), "events.jsonl")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--json", "--db", db, "--events", events,
		"--model", "mock:gpt-test", "--workspace", ws, "read notes.txt")
	cmd.Env = redactEnv(t, home, "MOCKPROV="+providerKey, "DATABASE_URL=postgres://app:"+dbPassword+"@db.internal/app")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rein run: %v\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
	}

	reqs := mock.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the mock got %d requests, want 2 (the tool's result goes back in the second)", len(reqs))
	}
	if !strings.Contains(string(reqs[1].Body), redact.Mask) {
		t.Errorf("the second request carries no mask; did read_file run?\n%.600s", reqs[1].Body)
	}
	places := map[string]string{"--json output": stdout.String(), "stderr": stderr.String()}
	for i, r := range reqs {
		places["request body "+string(rune('1'+i))] = string(r.Body)
	}
	if b, err := os.ReadFile(events); err == nil {
		places["--events file"] = string(b)
	}
	files, _ := filepath.Glob(db + "*")
	if len(files) == 0 {
		t.Fatal("no store written")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		places["store "+filepath.Base(f)] = string(b)
	}
	for where, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s leaked into the %s", s, where)
			}
		}
	}
}
