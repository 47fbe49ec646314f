package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
)

func TestDoctorReportsWithoutPrintingSecrets(t *testing.T) {
	clearKeys(t)
	cfg, data := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("OPENAI_API_KEY", "sk-doctor-must-not-print")
	t.Setenv("DEEPSEEK_BASE_URL", "http://user:hunter2@127.0.0.1:9/v1?key=also-secret")

	code, stdout, stderr := runMain(t, context.Background(), "doctor")
	if code != ExitCompleted {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, secret := range []string{"sk-doctor-must-not-print", "hunter2", "also-secret"} {
		if strings.Contains(stdout, secret) {
			t.Errorf("doctor printed %q:\n%s", secret, stdout)
		}
	}
	for _, want := range []struct{ label, text string }{
		{"config", filepath.Join(cfg, "rein", "config.toml") + " (not found"},
		{"data", filepath.Join(data, "rein") + " (not created yet)"},
		{"openai", "key set (OPENAI_API_KEY)"},
		{"anthropic", "no key: set ANTHROPIC_API_KEY"},
		{"deepseek", "base URL http://127.0.0.1:9/v1"},
		{"sandbox", sandbox.Detect().String()},
		{"ripgrep", ""},
	} {
		if line := doctorLine(stdout, want.label); !strings.Contains(line, want.text) || line == "" {
			t.Errorf("doctor's %s line %q lacks %q:\n%s", want.label, line, want.text, stdout)
		}
	}
}

// doctorLine returns the line of the report whose first field is label.
func doctorLine(out, label string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == label {
			return l
		}
	}
	return ""
}

func TestDoctorFailsOnUnreadableConfig(t *testing.T) {
	clearKeys(t)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if err := os.MkdirAll(filepath.Join(cfg, "rein"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "rein", "config.toml"), []byte("model = [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runMain(t, context.Background(), "doctor")
	if code != ExitFailed || !strings.Contains(stdout, "cannot be read") || !strings.Contains(stdout, "sandbox") {
		t.Errorf("exit %d, output:\n%s", code, stdout)
	}
}

// TestDoctorReportsMCPServers: doctor starts the configured MCP servers and
// says how many tools each lists, whether it is trusted, and why one that
// did not come up is down; a server down does not fail the report.
func TestDoctorReportsMCPServers(t *testing.T) {
	clearKeys(t)
	cfgDir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("[mcp.servers.tr]\ncommand = %q\nenv = { REIN_TEST_MCP = \"1\" }\ntrusted = true\n\n"+
		"[mcp.servers.gone]\ncommand = %q\nstart_timeout = \"2s\"\n", os.Args[0], filepath.Join(t.TempDir(), "no-such-server"))
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runMain(t, context.Background(), "doctor")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^  tr +2 tools, trusted$`).MatchString(out) {
		t.Errorf("no line for the trusted server with its 2 tools:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  gone +down: .*no-such-server`).MatchString(out) {
		t.Errorf("no line saying why gone is down:\n%s", out)
	}
}
