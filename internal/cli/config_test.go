package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// writeConfig writes the config file rein reads (clearKeys has pointed
// XDG_CONFIG_HOME at a temporary directory).
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// secretsWorkspace is a workspace with files the deny list may cover.
func secretsWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"secrets/token.txt": "TOKEN-123\n",
		".env":              "SECRET=1\n",
		".env.example":      "EXAMPLE=1\n",
		"Makefile":          "all:\n",
		"notes.txt":         "hello\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeSandboxReport makes rein see rep as what works here.
func fakeSandboxReport(t *testing.T, rep sandbox.Report) {
	t.Helper()
	prev := detectSandbox
	detectSandbox = func() sandbox.Report { return rep }
	t.Cleanup(func() { detectSandbox = prev })
}

// TestSandboxConfigReachesTheFileTools: the [sandbox] deny list is the one
// read_file and write_file follow in a run — a deny_read pattern refuses a
// file, allow exempts one from the defaults, a default listed in allow is
// gone, and deny_write keeps a file readable but not writable.
func TestSandboxConfigReachesTheFileTools(t *testing.T) {
	call := func(id, name, args string) string {
		return fmt.Sprintf("      - {id: %s, name: %s, args: %s}\n", id, name, args)
	}
	expect := func(id, contains string) string {
		return fmt.Sprintf("      - result: {call: %s, contains: %q}\n", id, contains)
	}
	calls := call("r1", "read_file", "{path: secrets/token.txt}") +
		call("r2", "read_file", "{path: .env.example}") +
		call("r3", "read_file", "{path: .env}") +
		call("w1", "write_file", `{path: Makefile, content: "x"}`) +
		call("r4", "read_file", "{path: notes.txt}")
	// The results are JSON: no quotes in what is expected.
	denied := "is on the sandbox's deny list (rule"
	tests := []struct {
		name, config string
		want         map[string][]string
		makefile     string
	}{
		{"no config: the defaults", "",
			map[string][]string{"r1": {"TOKEN-123"}, "r2": {denied, ".env*"}, "r3": {denied, ".env*"}, "w1": {"Makefile"}, "r4": {"hello"}}, "x"},
		{"deny_read, deny_write and allow",
			"[sandbox]\ndeny_read = [\"secrets/**\"]\ndeny_write = [\"Makefile\"]\nallow = [\"**/.env.example\"]\n",
			map[string][]string{"r1": {denied, "secrets/**"}, "r2": {"EXAMPLE=1"}, "r3": {denied, ".env*"},
				"w1": {"may not be written: it is on the sandbox's deny list (rule", "Makefile"}, "r4": {"hello"}}, "all:\n"},
		{"a default pattern in allow is removed", "[sandbox]\nallow = [\".env*\"]\n",
			map[string][]string{"r1": {"TOKEN-123"}, "r2": {"EXAMPLE=1"}, "r3": {"SECRET=1"}, "r4": {"hello"}}, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearKeys(t)
			if tt.config != "" {
				writeConfig(t, tt.config)
			}
			dir := secretsWorkspace(t)
			script := "rounds:\n  - calls:\n" + calls + "  - text: done\n    expect:\n"
			for _, id := range []string{"r1", "r2", "r3", "w1", "r4"} {
				for _, w := range tt.want[id] {
					script += expect(id, w)
				}
			}
			code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+writeScript(t, script), "--workspace", dir, "read")
			if code != ExitCompleted {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "Makefile")); string(b) != tt.makefile {
				t.Errorf("Makefile is %q, want %q", b, tt.makefile)
			}
		})
	}
}

// prlimitReport is a machine where prlimit works and, with isolated,
// bubblewrap too.
func prlimitReport(isolated bool) sandbox.Report {
	rep := sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "bwrap was not found on PATH (test)",
		Prlimit: "/usr/bin/prlimit", LimitsReason: "memory, CPU time, file size and open files are limited (test)"}
	if isolated {
		rep.Isolation, rep.Bwrap, rep.Reason = sandbox.IsolationBwrap, "/usr/bin/bwrap", "works (test)"
		rep.ProcLimit, rep.LimitsReason = true, "all are limited (test)"
	}
	return rep
}

// TestServeAppliesTheSandboxConfig: the threads of rein serve, and of rein
// chat (the same backend, with --exec), get the config's deny list in
// their workspace and its limits in exec's runner.
func TestServeAppliesTheSandboxConfig(t *testing.T) {
	clearKeys(t)
	fakeSandboxReport(t, prlimitReport(true))
	cfg, err := config.Parse("[sandbox]\nmemory = \"512MiB\"\nmax_open_files = 77\ndeny_read = [\"secrets/**\"]\nallow = [\"**/.env.example\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	dir := secretsWorkspace(t)
	script := writeScript(t, "rounds:\n  - text: hi\n")
	st, err := openStore(t.Context(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tt := range []struct {
		name    string
		compose *toolFlags
	}{
		{"serve", nil},
		{"chat --exec", &toolFlags{capability: defaultCapability, exec: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request"}, dir: dir, logw: io.Discard, cfg: cfg, st: st, compose: tt.compose}
			defer b.close()
			o, _, err := b.setup(t.Context(), session.Thread{ID: "thread_cfg"})
			if err != nil {
				t.Fatal(err)
			}
			rf, ok := o.Tools.Get("read_file")
			if !ok {
				t.Fatal("no read_file")
			}
			read := func(path string) (tool.Output, error) {
				args, _ := json.Marshal(map[string]string{"path": path})
				return rf.Run(t.Context(), tool.Call{ID: "c1", Name: "read_file", Args: args, Partial: io.Discard})
			}
			if out, err := read("secrets/token.txt"); !errors.Is(err, sandbox.ErrDenied) || strings.Contains(out.Text, "TOKEN") {
				t.Errorf("read_file secrets/token.txt: %q, %v; want the deny list's refusal", out.Text, err)
			}
			if out, err := read(".env.example"); err != nil || !strings.Contains(out.Text, "EXAMPLE=1") {
				t.Errorf("read_file .env.example: %q, %v; want it read (allow)", out.Text, err)
			}
			// Offered to serve's threads too (approval on-request), as
			// to chat's: the runtime's rule.
			ex, ok := o.Tools.Get("exec")
			if !ok {
				t.Fatal("exec not mounted")
			}
			d := ex.Spec().Description
			for _, w := range []string{"512 MiB of memory", "77 open files", "secrets/**"} {
				if !strings.Contains(d, w) {
					t.Errorf("exec's description lacks %q: the runner or the workspace is not the config's:\n%s", w, d)
				}
			}
		})
	}
}

// TestSandboxConfigReachesCommands runs exec on this machine under the
// config's limits (prlimit) and, where bubblewrap works, its deny list
// (what it covers is masked in the command's sandbox).
func TestSandboxConfigReachesCommands(t *testing.T) {
	clearKeys(t)
	rep := sandbox.Detect()
	if rep.Prlimit == "" {
		t.Skipf("prlimit does not work here: %s", rep.LimitsReason)
	}
	writeConfig(t, "[sandbox]\nmemory = \"256MiB\"\nmax_open_files = 77\nmax_file_size = \"1MiB\"\ndeny_read = [\"secrets/**\"]\nallow = [\"**/.env.example\"]\n")
	modes := []string{"full-access"}
	if rep.Isolated() {
		modes = append(modes, "workspace-write")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			dir := secretsWorkspace(t)
			script := `rounds:
  - calls:
      - {id: e1, name: exec, args: {command: "echo nofile=$(ulimit -n) data=$(ulimit -d) fsize=$(ulimit -f)"}}
  - text: done
    expect:
      - result: {call: e1, contains: "nofile=77 data=262144 fsize=2048"}
`
			if mode == "workspace-write" {
				script = `rounds:
  - calls:
      - {id: e1, name: exec, args: {command: "echo nofile=$(ulimit -n) data=$(ulimit -d) fsize=$(ulimit -f)"}}
      - {id: e2, name: exec, args: {command: "if cat secrets/token.txt >/dev/null 2>&1; then echo READABLE; else echo MASKED; fi; cat .env.example"}}
  - text: done
    expect:
      - result: {call: e1, contains: "nofile=77 data=262144 fsize=2048"}
      - result: {call: e2, contains: "MASKED\nEXAMPLE=1"}
`
			}
			code, stdout, stderr := runMain(t, context.Background(), "run", "--exec", "--sandbox", mode, "--model", "scripted:"+writeScript(t, script), "--workspace", dir, "limits")
			if code != ExitCompleted {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
		})
	}
}

// TestToolsAndDoctorShowTheSandboxConfig: rein doctor and rein tools
// report the limits and the deny list the config sets, as enforced.
func TestToolsAndDoctorShowTheSandboxConfig(t *testing.T) {
	clearKeys(t)
	fakeSandboxReport(t, prlimitReport(true))
	writeConfig(t, `[sandbox]
memory         = "512MiB"
cpu_time       = "90s"
max_processes  = 64
max_file_size  = "10MiB"
max_open_files = 77
deny_read      = ["secrets/**"]
deny_write     = ["Makefile"]
allow          = ["**/.env.example", ".netrc"]
`)
	const (
		limits = "memory 512 MiB, cpu_time 1m30s, max_file_size 10 MiB, max_open_files 77 per process; max_processes 64 per command; " +
			"set by the config: memory, cpu_time, max_processes, max_file_size, max_open_files"
		deny = "neither read nor written: .env*, *.pem, id_rsa*, id_dsa*, id_ecdsa*, id_ed25519*, .ssh, .aws, .gnupg, .git-credentials, secrets/**; " +
			"read-only: **/.git/hooks, **/.git/config, Makefile; exempt: **/.env.example, .netrc"
	)
	code, stdout, stderr := runMain(t, context.Background(), "doctor")
	if code != ExitCompleted {
		t.Fatalf("doctor: exit %d, stderr %s", code, stderr)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for label, want := range map[string]string{"limits": "limits " + limits, "deny": "deny list " + deny} {
		if line := flat(doctorLine(stdout, label)); line != want {
			t.Errorf("doctor's %s line\n%q, want\n%q", label, line, want)
		}
	}

	code, stdout, stderr = runMain(t, context.Background(), "tools", "--workspace", t.TempDir())
	if code != ExitCompleted {
		t.Fatalf("tools: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"limits: " + limits, "deny list: " + deny} {
		if !strings.Contains(flat(stdout), want) {
			t.Errorf("tools' output lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runMain(t, context.Background(), "tools", "--json", "--workspace", t.TempDir())
	if code != ExitCompleted {
		t.Fatalf("tools --json: exit %d, stderr %s", code, stderr)
	}
	var r struct {
		Limits limitsReport `json:"limits"`
		Deny   denyReport   `json:"deny"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	wantLimits := limitsReport{Enforced: true, ProcessesEnforced: true, Memory: 512 << 20, CPUTime: "1m30s", MaxProcesses: 64, MaxFileSize: 10 << 20, MaxOpenFiles: 77,
		Configured: []string{"memory", "cpu_time", "max_processes", "max_file_size", "max_open_files"}}
	if !reflect.DeepEqual(r.Limits, wantLimits) {
		t.Errorf("limits %+v\nwant   %+v", r.Limits, wantLimits)
	}
	if !slices.Contains(r.Deny.Read, "secrets/**") || slices.Contains(r.Deny.Read, ".netrc") || !slices.Contains(r.Deny.Write, "Makefile") ||
		!slices.Equal(r.Deny.Allow, []string{"**/.env.example", ".netrc"}) {
		t.Errorf("deny %+v", r.Deny)
	}
}

// TestToolsAndDoctorSayWhichLimitsApply: no limits where prlimit does not
// work, saying the config's are not applied; "none" and the defaults as
// such; max_processes not enforced outside bubblewrap.
func TestToolsAndDoctorSayWhichLimitsApply(t *testing.T) {
	tests := []struct {
		name   string
		rep    sandbox.Report
		mode   string
		config string
		want   string
	}{
		{"defaults", prlimitReport(true), "workspace-write", "",
			"limits memory 2 GiB, cpu_time the call's timeout, max_file_size 1 GiB, max_open_files 1024 per process; max_processes 1024 per command"},
		{"none", prlimitReport(true), "workspace-write", "[sandbox]\nmemory = \"none\"\ncpu_time = \"none\"\nmax_open_files = -1\n",
			"limits memory none, cpu_time none, max_file_size 1 GiB, max_open_files none per process; max_processes 1024 per command; set by the config: memory, cpu_time, max_open_files"},
		{"no process limit on the host", prlimitReport(false), "workspace-write", "[sandbox]\nmax_processes = 64\n",
			"limits memory 2 GiB, cpu_time the call's timeout, max_file_size 1 GiB, max_open_files 1024 per process; max_processes 64 per command (not enforced here); set by the config: max_processes"},
		{"nor in full-access mode", prlimitReport(true), "full-access", "",
			"max_processes 1024 per command (not enforced here)"},
		{"without prlimit", sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "test", LimitsReason: "none: prlimit was not found on PATH (test)"}, "workspace-write",
			"[sandbox]\nmemory = \"1G\"\n",
			"limits none: prlimit was not found on PATH (test); the config's [sandbox] limits (memory) are not applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearKeys(t)
			fakeSandboxReport(t, tt.rep)
			if tt.config != "" {
				writeConfig(t, tt.config)
			}
			code, stdout, stderr := runMain(t, context.Background(), "doctor", "--sandbox", tt.mode)
			if code != ExitCompleted {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			if line := strings.Join(strings.Fields(doctorLine(stdout, "limits")), " "); !strings.Contains(line, tt.want) {
				t.Errorf("doctor's limits line\n%q, want it to contain\n%q", line, tt.want)
			}
		})
	}
}

// TestBadSandboxConfigIsAUsageError: a command that would open a
// workspace or run commands refuses a config whose [sandbox] table is
// wrong, naming the file, the key and what is allowed, rather than run on
// the defaults; doctor says so and exits 1.
func TestBadSandboxConfigIsAUsageError(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	p := writeConfig(t, "[sandbox]\nmemory = \"lots\"\ndeny_read = [\"../x\"]\n")
	script := writeScript(t, "rounds:\n  - text: hi\n")
	wants := []string{p + ": ", `sandbox: memory "lots": want a size such as "512MiB"`, `sandbox: deny_read[0] "../x": a pattern may not hold ".."`}
	for _, args := range [][]string{
		{"run", "--model", "scripted:" + script, "--workspace", t.TempDir(), "x"},
		{"tools", "--workspace", t.TempDir()},
		{"serve", "--stdio", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "rein.db")},
		{"demo", "--model", "scripted"},
		{"context", "--model", "openai:gpt-5", "--history", writeScript(t, "[]")},
	} {
		code, stdout, stderr := runMain(t, context.Background(), args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", args, code, ExitUsage, stdout, stderr)
		}
		for _, w := range wants {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
			}
		}
	}
	code, stdout, _ := runMain(t, context.Background(), "doctor")
	if code != ExitFailed || !strings.Contains(doctorLine(stdout, "config"), `sandbox: memory "lots"`) {
		t.Errorf("doctor: exit %d\n%s", code, stdout)
	}
}
