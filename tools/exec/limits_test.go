package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// helperEnv names what the test binary does when a test runs it as a
// command, instead of running the tests.
const helperEnv = "REIN_EXEC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "alloc" {
		// 3 GiB, above the default memory limit; never touched, so it
		// costs nothing where the limit does not bite.
		fmt.Println("allocating 3 GiB")
		b := make([]byte, 3<<30)
		fmt.Println("allocated", len(b))
		runtime.KeepAlive(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// limitRunners returns runners whose commands run under limits o: on the
// host with prlimit, and in bubblewrap, each when it works here.
func limitRunners(t *testing.T, o sandbox.Options) map[string]*sandbox.Runner {
	t.Helper()
	rs := map[string]*sandbox.Runner{}
	if p, err := osexec.LookPath("prlimit"); err == nil {
		rs["plain"] = sandbox.NewRunnerOptions(sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "test", Prlimit: p}, sandbox.ModeWorkspaceWrite, o)
	} else {
		t.Logf("host cases skipped: prlimit (util-linux) is not installed")
	}
	if r := sandbox.Detect(); r.Isolated() && r.Prlimit != "" {
		rs["bwrap"] = sandbox.NewRunnerOptions(r, sandbox.ModeWorkspaceWrite, o)
	} else {
		t.Logf("bubblewrap cases skipped: %s", r)
	}
	if len(rs) == 0 {
		t.Skip("no runner can set limits here: prlimit (util-linux) is missing or does not work")
	}
	return rs
}

// copyTestBinary copies the test binary into the workspace, where a
// command can run it as ./helper.
func copyTestBinary(t *testing.T, ws *sandbox.Workspace) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("the test binary cannot run itself: %v", err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Skipf("the test binary cannot be read: %v", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(ws.Dir(), "helper"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestExecNamesTheMemoryLimit(t *testing.T) {
	for name, r := range limitRunners(t, sandbox.Options{}) {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t)
			copyTestBinary(t, ws)
			out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}),
				map[string]any{"command": helperEnv + "=alloc ./helper"})
			if !strings.Contains(out.Text, "allocating 3 GiB") {
				t.Fatalf("the helper did not start: %s", out.Text)
			}
			head, _, _ := strings.Cut(out.Text, "\n")
			if !out.Failed || strings.Contains(out.Text, "allocated") || strings.HasPrefix(head, "exit code 0") ||
				!strings.Contains(head, "the command may have hit the memory limit (2 GiB per process)") {
				t.Errorf("a 3 GiB allocation: %s", out.Text)
			}
		})
	}
}

func TestExecNamesTheCPULimit(t *testing.T) {
	for name, r := range limitRunners(t, sandbox.Options{Limits: sandbox.Limits{CPU: time.Second}}) {
		t.Run(name, func(t *testing.T) {
			out, _ := call(t, context.Background(), Exec(workspace(t), Options{Runner: r}),
				map[string]any{"command": "while :; do :; done", "timeout": 60})
			head, _, _ := strings.Cut(out.Text, "\n")
			if !out.Failed || !strings.Contains(head, "stopped by a limit (SIGXCPU: the CPU time limit (1 s per process) was reached)") {
				t.Errorf("a CPU spinner: %s", out.Text)
			}
			if strings.Contains(head, "timed out") {
				t.Errorf("the timeout, not the CPU limit, stopped it: %s", head)
			}
		})
	}
}

func TestExecNamesTheFileSizeLimit(t *testing.T) {
	for name, r := range limitRunners(t, sandbox.Options{}) {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t)
			// A 2 GiB file: one MiB written after a hole of 2047 MiB.
			out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}),
				map[string]any{"command": "dd if=/dev/zero of=big bs=1M seek=2047 count=1"})
			head, _, _ := strings.Cut(out.Text, "\n")
			if !out.Failed || !strings.Contains(head, "SIGXFSZ: the file size limit (1 GiB per file) was reached") {
				t.Errorf("a 2 GiB file: %s", out.Text)
			}
			if fi, err := os.Stat(filepath.Join(ws.Dir(), "big")); err == nil && fi.Size() > 1<<30 {
				t.Errorf("big is %d bytes", fi.Size())
			}
		})
	}
}

func TestDescriptionsNameLimitsAndDenyList(t *testing.T) {
	ws := workspace(t)
	for name, r := range limitRunners(t, sandbox.Options{}) {
		t.Run(name, func(t *testing.T) {
			for _, tl := range Tools(ws, Options{Runner: r}) {
				d := tl.Spec().Description
				if !strings.Contains(d, "Limits: each process may use 2 GiB of memory") {
					t.Errorf("%s: %q", tl.Spec().Name, d)
				}
				if deny := strings.Contains(d, "deny list") && strings.Contains(d, ".env*") && strings.Contains(d, "**/.git/hooks"); deny != r.Report().Isolated() {
					t.Errorf("%s names the deny list %v, isolated %v: %q", tl.Spec().Name, deny, r.Report().Isolated(), d)
				}
			}
		})
	}
	if d := Exec(ws, Options{Runner: plain}).Spec().Description; !strings.Contains(d, "without limits") || strings.Contains(d, "deny list") {
		t.Errorf("without prlimit or bubblewrap: %q", d)
	}
}

func TestExecCannotReadDeniedFiles(t *testing.T) {
	r := bwrap(t)
	ws := workspace(t)
	for name, data := range map[string]string{".env": "API_KEY=sk-secret\n", "README": "read me\n", "certs/key.pem": "pem-secret\n"} {
		p := filepath.Join(ws.Dir(), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ex := Exec(ws, Options{Runner: r})
	out, _ := call(t, context.Background(), ex, map[string]any{"command": "cat README"})
	if out.Failed || !strings.Contains(out.Text, "read me") {
		t.Errorf("cat README: %s", out.Text)
	}
	for _, cmd := range []string{"cat .env", "cat certs/key.pem", "grep -r secret ."} {
		out, _ := call(t, context.Background(), ex, map[string]any{"command": cmd})
		if !out.Failed || strings.Contains(out.Text, "sk-secret") || strings.Contains(out.Text, "pem-secret") {
			t.Errorf("%s: %s", cmd, out.Text)
		}
	}
	code := CodeExecution(ws, Options{Runner: r})
	out, _ = call(t, context.Background(), code, map[string]any{"language": "sh", "code": `cat "$WORKSPACE/.env"`})
	if !out.Failed || strings.Contains(out.Text, "sk-secret") {
		t.Errorf("code_execution reading .env: %s", out.Text)
	}
	out, _ = call(t, context.Background(), code, map[string]any{"language": "sh", "code": `mkdir -p "$WORKSPACE/.git/hooks" 2>/dev/null; cat "$WORKSPACE/README"`})
	if out.Failed || !strings.Contains(out.Text, "read me") {
		t.Errorf("code_execution reading README: %s", out.Text)
	}
}

func TestExecCannotWriteGitHooks(t *testing.T) {
	r := bwrap(t)
	ws := workspace(t)
	if err := os.MkdirAll(filepath.Join(ws.Dir(), ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}),
		map[string]any{"command": "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit"})
	if !out.Failed || !strings.Contains(out.Text, "Read-only file system") {
		t.Errorf("writing a hook: %s", out.Text)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), ".git/hooks/pre-commit")); err == nil {
		t.Error("the hook was written")
	}
}
