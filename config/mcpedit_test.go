package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAddAndRemoveMCPServersKeepTheRestOfTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein", "config.toml")
	// No file yet: it is made.
	if err := AddMCPServer(path, "fs", MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}, Env: map[string]string{"A": "1"}}); err != nil {
		t.Fatal(err)
	}
	orig := "# my providers\nmodel = \"openai:gpt-5\" # the default\n\n"
	if err := os.WriteFile(path, append([]byte(orig), mustRead(t, path)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := AddMCPServer(path, "docs", MCPServer{URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}, CallTimeout: time.Minute, Trusted: true}); err != nil {
		t.Fatal(err)
	}
	if err := AddMCPServer(path, "fs", MCPServer{Command: "x"}); !errors.Is(err, ErrServerExists) {
		t.Errorf("adding fs again: %v; want ErrServerExists", err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fs, docs := f.MCP.Servers["fs"], f.MCP.Servers["docs"]
	if fs.Command != "npx" || len(fs.Args) != 3 || fs.Env["A"] != "1" || docs.URL != "https://mcp.example.com/mcp" || !docs.Trusted || docs.CallTimeout != time.Minute || docs.Headers["Authorization"] == "" {
		t.Fatalf("read back: fs %+v, docs %+v", fs, docs)
	}
	if err := RemoveMCPServer(path, "fs"); err != nil {
		t.Fatal(err)
	}
	text := string(mustRead(t, path))
	if !strings.HasPrefix(text, orig) {
		t.Errorf("the file's own text changed:\n%s", text)
	}
	f, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.MCP.Servers["fs"]; ok || f.MCP.Servers["docs"].URL == "" || f.Model != "openai:gpt-5" {
		t.Errorf("after rm fs: %+v", f)
	}
	if err := RemoveMCPServer(path, "nope"); err == nil || !strings.Contains(err.Error(), "no MCP server") {
		t.Errorf("rm of a missing server: %v", err)
	}
}

func TestAddMCPServerRefusesWhatWouldBreakTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	broken := "modle = \"openai:gpt-5\"\n"
	os.WriteFile(path, []byte(broken), 0o600)
	if err := AddMCPServer(path, "b", MCPServer{Command: "y"}); err == nil || !strings.Contains(err.Error(), "fix it before adding") {
		t.Fatalf("adding to a file that does not check: %v; want a refusal", err)
	}
	if got := string(mustRead(t, path)); got != broken {
		t.Errorf("a refused add changed the file: %q", got)
	}
	for _, tc := range []struct {
		name string
		s    MCPServer
	}{{"bad name!", MCPServer{Command: "x"}}, {"both", MCPServer{Command: "x", URL: "http://y"}}, {"neither", MCPServer{}}} {
		if err := AddMCPServer(path, tc.name, tc.s); err == nil {
			t.Errorf("AddMCPServer(%q, %+v) was not refused", tc.name, tc.s)
		}
	}
}

func TestMCPJSONReadsClaudeCodesFormat(t *testing.T) {
	servers, skipped, err := MCPJSON([]byte(`{"mcpServers":{
		"fs":{"command":"npx","args":["-y","server-filesystem"],"env":{"K":"v"}},
		"web":{"type":"http","url":"https://x/mcp","headers":{"H":"1"}},
		"old":{"type":"sse","url":"https://x/sse"},
		"bad name":{"command":"x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if servers["fs"].Command != "npx" || servers["fs"].Env["K"] != "v" || servers["web"].URL != "https://x/mcp" || len(servers) != 2 {
		t.Errorf("servers %+v", servers)
	}
	if skipped["old"] == "" || skipped["bad name"] == "" {
		t.Errorf("skipped %v", skipped)
	}
	if _, _, err := MCPJSON([]byte(`{`)); err == nil {
		t.Error("broken JSON was not refused")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
