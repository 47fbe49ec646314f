package security

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// execRun runs `rein run --exec` with a scripted model whose rounds each
// call exec with one of commands, in workspace ws and sandbox mode mode,
// with config as its config file (when not ""), with env added to a clean
// environment, and returns the content of each exec result in order.
func execRun(t *testing.T, ws, mode, config string, env []string, commands ...string) []string {
	t.Helper()
	bin := reinBinary(t)
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("rounds:\n")
	for i, c := range commands {
		args, err := json.Marshal(map[string]string{"command": c})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "  - calls:\n      - id: e%d\n        name: exec\n        args: %s\n", i+1, args)
	}
	script.WriteString("  - text: done\n")
	scriptPath := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--model", "scripted:"+scriptPath, "--workspace", ws,
		"--sandbox", mode, "--exec", "--json", "--db", filepath.Join(dir, "rein.db"), "attack")
	home := filepath.Join(dir, "home")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"), "LANG=C.UTF-8",
	}, env...)
	if config != "" {
		if err := os.MkdirAll(filepath.Join(home, ".config/rein"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".config/rein/config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rein run: %v\n%s\n%s", err, stderr.String(), out)
	}
	var results []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Name    string `json:"name"`
			Content string `json:"content"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "result" && ev.Name == "exec" {
			results = append(results, ev.Content)
		}
	}
	if len(results) != len(commands) {
		t.Fatalf("%d exec results for %d calls:\n%s\n%s", len(results), len(commands), out, stderr.String())
	}
	return results
}

// execModes are the sandbox modes in which exec runs without asking here:
// full-access always, workspace-write where bubblewrap works.
func execModes(t *testing.T) []string {
	t.Helper()
	modes := []string{"full-access"}
	if r := sandbox.Detect(); r.Isolated() {
		modes = append(modes, "workspace-write")
	} else {
		t.Logf("workspace-write skipped (exec would ask for approval): %s", r)
	}
	return modes
}

// TestExecCannotWriteGit: through the real binary, in workspace-write
// mode, exec cannot plant what the user's next git would run: a hook
// with or without a hooks directory, commondir, core.fsmonitor, or a
// whole .git where there was none (issue 11 §2).
func TestExecCannotWriteGit(t *testing.T) {
	reinBinary(t)
	if r := sandbox.Detect(); !r.Isolated() {
		t.Skipf("bubblewrap is not usable here, and without it exec's .git writes are not prevented (it asks first): %s", r)
	}
	repo := func(t *testing.T, hooks bool) string {
		ws := t.TempDir()
		for _, d := range []string{".git/objects", ".git/refs"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if hooks {
			if err := os.Mkdir(filepath.Join(ws, ".git/hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, data := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n"} {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return ws
	}
	for _, tc := range []struct {
		name    string
		ws      func(t *testing.T) string
		command string
		absent  []string
	}{
		{"existing hooks directory", func(t *testing.T) string { return repo(t, true) },
			"printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
			[]string{".git/hooks/pre-commit"}},
		{"missing hooks directory", func(t *testing.T) string { return repo(t, false) },
			"mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit",
			[]string{".git/hooks"}},
		{"commondir", func(t *testing.T) string { return repo(t, true) },
			"echo /tmp/evil > .git/commondir", []string{".git/commondir"}},
		{"info and alternates", func(t *testing.T) string { return repo(t, true) },
			"mkdir -p .git/info .git/objects/info; echo x > .git/info/attributes; echo /tmp > .git/objects/info/alternates",
			[]string{".git/info", ".git/objects/info"}},
		{"no .git at all", func(t *testing.T) string { return t.TempDir() },
			"mkdir -p .git/hooks && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > .git/config",
			[]string{".git"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := tc.ws(t)
			config, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
			res := execRun(t, ws, "workspace-write", "", nil,
				tc.command+"; printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config; echo ok > proof.txt")
			for _, p := range tc.absent {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s was created on the host; exec said:\n%s", p, res[0])
				}
			}
			if got, _ := os.ReadFile(filepath.Join(ws, ".git/config")); !bytes.Equal(got, config) {
				t.Errorf(".git/config changed to %q; exec said:\n%s", got, res[0])
			}
			if b, err := os.ReadFile(filepath.Join(ws, "proof.txt")); err != nil || string(b) != "ok\n" {
				t.Errorf("the command did not run, or could not write the workspace: %v; exec said:\n%s", err, res[0])
			}
		})
	}
}

// TestExecEnvironmentIsAnAllowList: secrets in rein's environment under
// names no pattern guesses never reach exec, in any mode (issue 11 §2).
func TestExecEnvironmentIsAnAllowList(t *testing.T) {
	reinBinary(t)
	secrets := []string{
		"MYSQL_PWD=exec-leak-1", "REDIS_URL=redis://:exec-leak-2@cache:6379/0",
		"SENTRY_DSN=https://exec-leak-3@o1.ingest.sentry.io/1", "CI_JOB_JWT=exec-leak-4",
		"OPENAI_API_KEY=sk-exec-leak-5", "SOME_PLAIN_SETTING=exec-leak-6",
	}
	for _, mode := range execModes(t) {
		t.Run(mode, func(t *testing.T) {
			// The config file may add a name; only that one passes.
			env := append(slices.Clone(secrets), "REIN_SEC_LISTED=listed-value")
			res := execRun(t, t.TempDir(), mode, "[sandbox]\nenv = [\"REIN_SEC_LISTED\"]\n", env, "env; echo END")
			if !strings.Contains(res[0], "REIN_SEC_LISTED=listed-value") {
				t.Errorf("the variable [sandbox] env names did not reach exec:\n%s", res[0])
			}
			for _, kv := range secrets {
				name, _, _ := strings.Cut(kv, "=")
				if strings.Contains(res[0], name+"=") {
					t.Errorf("%s reached exec:\n%s", name, res[0])
				}
			}
			if strings.Contains(res[0], "exec-leak") || !strings.Contains(res[0], "PATH=") || !strings.Contains(res[0], "END") {
				t.Errorf("exec's environment:\n%s", res[0])
			}
		})
	}
}

// TestExecLeavesNoProcessBehind: a daemon made with setsid, or orphaned
// by a double fork, does not outlive the exec call that started it, in
// any mode (issue 11 §2): the next call no longer finds it, nor does the
// host once rein has exited.
func TestExecLeavesNoProcessBehind(t *testing.T) {
	reinBinary(t)
	for _, mode := range execModes(t) {
		t.Run(mode, func(t *testing.T) {
			a := fmt.Sprintf("301.%06d", rand.IntN(1_000_000))
			b := fmt.Sprintf("302.%06d", rand.IntN(1_000_000))
			spawn := fmt.Sprintf(`setsid sh -c 'sleep %s' </dev/null >/dev/null 2>&1 &
sh -c '(setsid sleep %s </dev/null >/dev/null 2>&1 &) &'
sleep 0.3; echo spawned`, a, b)
			// The second call looks for them from the host in
			// full-access; in bubblewrap it would see its own namespace
			// only, so the host's /proc is read below.
			// "[.]" keeps grep and this script from matching themselves.
			look := fmt.Sprintf(`for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c -e 'sleep %s' -e 'sleep %s' || true`,
				strings.Replace(a, ".", "[.]", 1), strings.Replace(b, ".", "[.]", 1))
			res := execRun(t, t.TempDir(), mode, "", nil, spawn, look)
			if !strings.Contains(res[0], "spawned") {
				t.Fatalf("the command did not run:\n%s", res[0])
			}
			if mode == "full-access" {
				if lines := strings.Split(strings.TrimSpace(res[1]), "\n"); lines[len(lines)-1] != "0" {
					t.Errorf("the next call still found the daemons:\n%s", res[1])
				}
			}
			if pids := execSurvivors(a, b); len(pids) > 0 {
				for _, p := range pids {
					_ = exec.Command("kill", "-9", p).Run()
				}
				t.Errorf("processes outlived the exec call: %v", pids)
			}
		})
	}
}

// execSurvivors returns the pids of processes running `sleep MARKER` for
// one of markers.
func execSurvivors(markers ...string) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, m := range markers {
			if strings.Contains(string(b), "sleep\x00"+m) {
				pids = append(pids, e.Name())
			}
		}
	}
	return pids
}
