package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMCPAddListRmAndImport(t *testing.T) {
	clearKeys(t)
	ctx := context.Background()
	if out := mustRun(t, "mcp", "add", "fs", "--env", "ROOT=/data", "--", "npx", "-y", "server-filesystem", "--flag"); !strings.Contains(out, "added MCP server fs") {
		t.Errorf("add: %q", out)
	}
	mustRun(t, "mcp", "add", "docs", "--url", "https://mcp.example.com/mcp", "--header", "Authorization=Bearer x")
	out := mustRun(t, "mcp", "list")
	if !strings.Contains(out, "npx -y server-filesystem --flag") || !strings.Contains(out, "https://mcp.example.com/mcp") {
		t.Errorf("list: %q", out)
	}
	if code, _, stderr := runMain(t, ctx, "mcp", "add", "fs", "--", "other"); code != ExitUsage || !strings.Contains(stderr, "configured already") {
		t.Errorf("add fs again: exit %d %q", code, stderr)
	}
	if code, _, stderr := runMain(t, ctx, "mcp", "add", "x", "cmd"); code != ExitUsage || !strings.Contains(stderr, "after --") {
		t.Errorf("add without --: exit %d %q", code, stderr)
	}
	mustRun(t, "mcp", "rm", "fs")
	if out := mustRun(t, "mcp", "list"); strings.Contains(out, "server-filesystem") || !strings.Contains(out, "docs") {
		t.Errorf("list after rm: %q", out)
	}

	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers":{"git":{"command":"uvx","args":["mcp-server-git"]},"docs":{"type":"http","url":"https://other"}}}`), 0o644)
	// Without a terminal and without --yes nothing is added.
	code, stdout, stderr := runMain(t, ctx, "mcp", "import", "-C", ws)
	if code != ExitUsage || !strings.Contains(stdout, "+ git: runs uvx mcp-server-git") || !strings.Contains(stderr, "--yes") {
		t.Errorf("import unconfirmed: exit %d %q %q", code, stdout, stderr)
	}
	if out := mustRun(t, "mcp", "list"); strings.Contains(out, "uvx") {
		t.Errorf("an unconfirmed import added servers: %q", out)
	}
	out = mustRun(t, "mcp", "import", "-C", ws, "--yes")
	if !strings.Contains(out, "added git") || !strings.Contains(out, "docs: configured already") {
		t.Errorf("import --yes: %q", out)
	}
	if out := mustRun(t, "mcp", "list"); !strings.Contains(out, "uvx mcp-server-git") || !strings.Contains(out, "https://mcp.example.com/mcp") {
		t.Errorf("list after import: %q", out)
	}
}

// TestMCPImportRefusesAHostileFile: a workspace's .mcp.json that links out
// of the workspace (to /dev/zero, which read forever) or is a FIFO (which
// waited for a writer) is refused at once, and nothing is added.
func TestMCPImportRefusesAHostileFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	link := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(link, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, ".mcp.json"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	for name, ws := range map[string]string{"link to /dev/zero": link, "fifo": fifo} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		code, _, stderr := runMain(t, ctx, "mcp", "import", "-C", ws, "--yes")
		cancel()
		if code != ExitUsage || !strings.Contains(stderr, ".mcp.json") {
			t.Errorf("%s: exit %d %q, want a usage error naming .mcp.json", name, code, stderr)
		}
	}
}
