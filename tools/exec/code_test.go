package exec

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCodeExecutionRunsSnippetsInAFreshDirectory(t *testing.T) {
	cases := []struct {
		lang, code, stdin, want string
		needs                   string
		slow                    bool
	}{
		{lang: "sh", code: "read x; echo got $x; echo made > new.txt", stdin: "42\n", want: "got 42\n"},
		{lang: "bash", code: "echo aliased", want: "aliased\n"},
		{lang: "python", code: "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))", stdin: "1 2 3", want: "6\n", needs: "python3"},
		{lang: "go", code: "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(6 * 7) }\n", want: "42\n", needs: "go", slow: true},
	}
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t)
			if err := os.WriteFile(filepath.Join(ws.Dir(), "data.txt"), []byte("from the workspace"), 0o644); err != nil {
				t.Fatal(err)
			}
			cache := filepath.Join(os.TempDir(), "rein-test-go-build")
			tl := CodeExecution(ws, Options{Runner: r, GoCache: cache})
			for _, c := range cases {
				if c.needs != "" {
					if _, err := osexec.LookPath(c.needs); err != nil {
						t.Logf("%s skipped: %s is not installed", c.lang, c.needs)
						continue
					}
				}
				if c.slow && testing.Short() {
					t.Logf("%s skipped in -short mode: it compiles", c.lang)
					continue
				}
				// The snippet reports its directory so the test can check
				// it was fresh and is gone.
				code := c.code
				switch c.lang {
				case "sh", "bash":
					code += "\npwd >&2; cat \"$WORKSPACE/data.txt\" >&2"
				}
				out, _ := call(t, context.Background(), tl, map[string]any{"language": c.lang, "code": code, "stdin": c.stdin, "timeout": 200})
				if out.Failed || !strings.HasPrefix(out.Text, "exit code 0") || !strings.Contains(out.Text, "\n"+c.want) {
					t.Errorf("%s: %+v, want %q", c.lang, out, c.want)
					continue
				}
				if c.lang == "sh" {
					if !strings.Contains(out.Text, "from the workspace") {
						t.Errorf("the snippet did not find the workspace: %s", out.Text)
					}
					lines := strings.Split(strings.TrimSpace(out.Text), "\n")
					dir := lines[len(lines)-2]
					if !strings.Contains(dir, "rein-code-") {
						t.Errorf("ran in %q, want a fresh directory", dir)
					} else if _, err := os.Stat(dir); !os.IsNotExist(err) {
						t.Errorf("the snippet's directory %s was not removed: %v", dir, err)
					}
				}
			}
			if entries, _ := os.ReadDir(ws.Dir()); len(entries) != 1 {
				t.Errorf("code_execution left files in the workspace: %v", entries)
			}
		})
	}
}

func TestCodeExecutionMissingInterpreter(t *testing.T) {
	ws := workspace(t)
	tl := CodeExecution(ws, Options{Runner: plain})
	// A PATH with sh alone on it: the interpreter is missing.
	bin := t.TempDir()
	if err := os.Symlink(mustLook(t, "sh"), filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	out, _ := call(t, context.Background(), tl, map[string]any{"language": "python", "code": "print(1)"})
	if !out.Failed || !strings.Contains(out.Text, "python3 is not installed here") || !strings.HasPrefix(out.Text, "exit code 127") {
		t.Errorf("output %+v", out)
	}
}

func TestCodeExecutionTimesOut(t *testing.T) {
	start := time.Now()
	out, _ := call(t, context.Background(), CodeExecution(workspace(t), Options{Runner: plain}),
		map[string]any{"language": "sh", "code": "echo before; sleep 30", "timeout": 1})
	if !out.Failed || !strings.HasPrefix(out.Text, "timed out after 1s") || !strings.Contains(out.Text, "before") {
		t.Errorf("output %+v", out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func mustLook(t *testing.T, name string) string {
	t.Helper()
	p, err := osexec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	return p
}
