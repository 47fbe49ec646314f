package agent

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// TestAHostileRepositorysAgentsMDReadsNothingTheToolsMayNot: AGENTS.md
// comes with the repository, and git checks links and FIFOs out as such.
// Read into every turn's instructions, it must be read as read_file would
// read it: a link to .env (the deny list), to a file outside the workspace
// (~/.aws/credentials) or to a device that never ends, and a FIFO that
// never opens, give no instructions, and the turn still gets its prompt.
func TestAHostileRepositorysAgentsMDReadsNothingTheToolsMayNot(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(outside, []byte("aws_secret_access_key = OUTSIDE-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string) error
	}{
		{"a link to .env", func(t *testing.T, dir string) error {
			if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("API_KEY=ENV-SECRET\n"), 0o600); err != nil {
				return err
			}
			return os.Symlink(".env", filepath.Join(dir, "AGENTS.md"))
		}},
		{"a link out of the workspace", func(t *testing.T, dir string) error { return os.Symlink(outside, filepath.Join(dir, "AGENTS.md")) }},
		{"a link to /dev/zero", func(t *testing.T, dir string) error { return os.Symlink("/dev/zero", filepath.Join(dir, "AGENTS.md")) }},
		{"a FIFO", func(t *testing.T, dir string) error { return syscall.Mkfifo(filepath.Join(dir, "AGENTS.md"), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.make(t, dir); err != nil {
				t.Fatal(err)
			}
			ws, err := sandbox.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			k, err := LoadKnowledge(t.Context(), ws, KnowledgeConfig{})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan string, 1)
			go func() { done <- k.Prompt(t.Context(), tool.NewSet(k.Tools()...), io.Discard) }()
			select {
			case p := <-done:
				if strings.Contains(p, "SECRET") || strings.Contains(p, "## instructions") {
					t.Errorf("the prompt holds AGENTS.md's target: %.200q", p)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the turn's prompt did not come within 10 s: AGENTS.md is still being read")
			}
		})
	}
}
