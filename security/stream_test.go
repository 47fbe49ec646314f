package security

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
)

// A hostile model stream (issue 11 §3): a provider — or whatever answers at
// its base URL — that never ends its stream, or stops sending after the
// headers. Before the fix, `rein run` read 9.5 GB of text in 45 s, took a
// 60 MB call argument whole, and ran on past --timeout 3s.

// streamMaxRSSAbove is the memory a turn against an endless stream may add
// to an idle turn's (DESIGN §11 "Bounded memory").
const streamMaxRSSAbove = 64 << 20

// streamRun is one `rein run` against a mock server.
type streamRun struct {
	outcome struct {
		Status     string `json:"status"`
		StopReason string `json:"stop_reason"`
		Answer     string `json:"answer"`
		Error      string `json:"error"`
		ThreadID   string `json:"thread_id"`
	}
	warnings []string // warning codes
	took     time.Duration
	maxRSS   int64 // bytes: the process's high-water mark (VmHWM)
	exit     int
}

// streamEnv is the environment of a run: the provider pointed at srv
// (the built-in openai-chat provider through OPENAI_BASE_URL), a private
// home and config directory with config as its config file.
func streamEnv(t *testing.T, baseURL, config string) []string {
	t.Helper()
	home := t.TempDir()
	cfgDir := filepath.Join(home, "config")
	if err := os.MkdirAll(filepath.Join(cfgDir, "rein"), 0o755); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(cfgDir, "rein", "config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfgDir, "PATH=" + os.Getenv("PATH"),
		"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + baseURL}
	return env
}

// streamRein runs rein with args in env and reads its JSON Lines output.
func streamRein(t *testing.T, env []string, args ...string) streamRun {
	t.Helper()
	bin := reinBinary(t)
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, out, &stderr, t.TempDir()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The test's own bound, far above what any case may take.
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	err = cmd.Wait()
	timer.Stop()
	var r streamRun
	r.took = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	r.exit = cmd.ProcessState.ExitCode()
	if err != nil && r.exit < 0 {
		t.Fatalf("rein %s: %v (killed after %s)\n%s", strings.Join(args, " "), err, r.took, stderr.String())
	}
	if _, err := out.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
			Code string `json:"code"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Type {
		case "warning":
			r.warnings = append(r.warnings, line.Code)
		case "outcome":
			json.Unmarshal(sc.Bytes(), &r.outcome)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading rein's output: %v", err)
	}
	if r.outcome.Status == "" {
		t.Fatalf("rein %s printed no outcome (exit %d)\n%s", strings.Join(args, " "), r.exit, stderr.String())
	}
	return r
}

func TestHostileModelStream(t *testing.T) {
	tests := []struct {
		name   string
		rounds []testkit.Round
		config string
		args   []string
		// want
		status, reason, warning string
		within                  time.Duration
	}{
		{
			name:   "endless text is cut at the round's cap",
			rounds: []testkit.Round{{Fault: testkit.FaultEndlessText}},
			args:   []string{"--timeout", "30s"},
			status: "failed", reason: "output_capped", warning: "output_cap", within: 10 * time.Second,
		},
		{
			name:   "an endless call argument is cut at the call's cap",
			rounds: []testkit.Round{{Fault: testkit.FaultEndlessArgs, Calls: []testkit.MockCall{{Name: "read_file"}}}},
			args:   []string{"--timeout", "30s"},
			status: "failed", reason: "output_capped", warning: "output_cap", within: 10 * time.Second,
		},
		{
			name:   "an endless whole body is cut at 16 MiB",
			rounds: []testkit.Round{{Fault: testkit.FaultEndlessText}},
			args:   []string{"--no-stream", "--timeout", "30s"},
			status: "failed", reason: "provider_error", within: 10 * time.Second,
		},
		{
			name:   "endless keep-alives are cut at 32 MiB",
			rounds: []testkit.Round{{Fault: testkit.FaultEndlessKeepAlive}},
			status: "failed", reason: "provider_error", within: 20 * time.Second,
		},
		{
			name:   "a smaller cap from the config file",
			rounds: []testkit.Round{{Fault: testkit.FaultEndlessText}},
			config: "[stream]\nmax_round_output = \"256KiB\"\n",
			status: "failed", reason: "output_capped", warning: "output_cap", within: 10 * time.Second,
		},
		{
			name:   "a stall after the headers ends at --timeout",
			rounds: []testkit.Round{{Fault: testkit.FaultStallAfterHeaders}, {Text: "best effort"}},
			args:   []string{"--timeout", "3s"},
			status: "completed", reason: "forced_time", warning: "deadline", within: 5 * time.Second,
		},
		{
			name:   "a stall throughout ends at --timeout and its grace",
			rounds: []testkit.Round{{Fault: testkit.FaultStallAfterHeaders}, {Fault: testkit.FaultStallAfterHeaders}},
			args:   []string{"--timeout", "3s"},
			// 3 s, then the forced round's grace of 1 s.
			status: "failed", reason: "forced_time", warning: "deadline", within: 6 * time.Second,
		},
		{
			name:   "a stall is cut by the provider's idle timeout",
			rounds: []testkit.Round{{Fault: testkit.FaultStallAfterHeaders}},
			config: "[models.\"openai-chat:*\"]\nidle_timeout = \"1s\"\n",
			status: "failed", reason: "provider_error", within: 5 * time.Second,
		},
	}
	// An idle turn's memory, the baseline of the bound.
	idle := func() int64 {
		srv := testkit.NewChatServer(t, testkit.Round{Text: "hello"})
		db := filepath.Join(t.TempDir(), "rein.db")
		r := streamRein(t, streamEnv(t, srv.BaseURL(), ""), "run", "--json", "--db", db, "--model", "openai-chat:mock", "hi")
		if r.outcome.Status != "completed" {
			t.Fatalf("the idle turn ended %s/%s: %s", r.outcome.Status, r.outcome.StopReason, r.outcome.Error)
		}
		return r.maxRSS
	}()
	t.Logf("an idle turn: %d MB", idle>>20)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testkit.NewChatServer(t, tt.rounds...)
			env := streamEnv(t, srv.BaseURL(), tt.config)
			db := filepath.Join(t.TempDir(), "rein.db")
			args := append([]string{"run", "--json", "--db", db, "--model", "openai-chat:mock"}, tt.args...)
			r := streamRein(t, env, append(args, "go")...)
			t.Logf("%s/%s in %s, %d MB (%d MB above idle): %s", r.outcome.Status, r.outcome.StopReason, r.took.Round(time.Millisecond),
				r.maxRSS>>20, (r.maxRSS-idle)>>20, r.outcome.Error)
			if r.outcome.Status != tt.status || r.outcome.StopReason != tt.reason {
				t.Errorf("outcome %s/%s (%s), want %s/%s", r.outcome.Status, r.outcome.StopReason, r.outcome.Error, tt.status, tt.reason)
			}
			if tt.warning != "" && !strings.Contains(strings.Join(r.warnings, " "), tt.warning) {
				t.Errorf("warnings %v, want %s", r.warnings, tt.warning)
			}
			if r.took > tt.within {
				t.Errorf("rein ran %s, want under %s", r.took, tt.within)
			}
			if r.maxRSS-idle > streamMaxRSSAbove {
				t.Errorf("rein's memory peaked at %d MB, %d MB above an idle turn's (bound %d MB)", r.maxRSS>>20, (r.maxRSS-idle)>>20, streamMaxRSSAbove>>20)
			}
			// The stored history loads and goes on: the next turn's request
			// keeps the history invariants (the mock server checks them).
			// A server of its own: a stalling round the cut turn never
			// asked for (its forced round's grace can end before the
			// request is made, on a loaded machine) must not answer it.
			after := testkit.NewChatServer(t, testkit.Round{Text: "the thread goes on"})
			next := streamRein(t, streamEnv(t, after.BaseURL(), tt.config), "run", "--json", "--db", db, "--model", "openai-chat:mock", "--thread", r.outcome.ThreadID, "and now?")
			if next.outcome.Status != "completed" || next.outcome.Answer != "the thread goes on" {
				t.Errorf("the next turn of the thread: %s/%s %q (%s)", next.outcome.Status, next.outcome.StopReason, next.outcome.Answer, next.outcome.Error)
			}
		})
	}
}
