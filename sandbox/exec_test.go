package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runners returns the runners to test: always the plain one, and the
// bubblewrap one when it works here.
func runners(t *testing.T) map[string]*Runner {
	t.Helper()
	rs := map[string]*Runner{"plain": NewRunner(Report{Isolation: IsolationNone})}
	if r := Detect(); r.Isolated() {
		rs["bwrap"] = NewRunner(r)
	} else {
		t.Logf("bubblewrap cases skipped: %s", r)
	}
	return rs
}

// bwrapRunner skips the test when bubblewrap cannot isolate commands here.
func bwrapRunner(t *testing.T) *Runner {
	t.Helper()
	r := Detect()
	if !r.Isolated() {
		t.Skipf("bubblewrap is not usable here, so sandbox isolation cannot be tested: %s", r)
	}
	return NewRunner(r)
}

// sleepMarker returns a sleep duration unique to this test, so its
// processes can be found in /proc.
func sleepMarker() string {
	return fmt.Sprintf("100.%06d", rand.IntN(1_000_000))
}

// survivors returns the pids of processes running `sleep marker`.
func survivors(t *testing.T, marker string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), "sleep\x00"+marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// waitNoSurvivors fails unless every `sleep marker` process is gone soon;
// a killed process may take a moment to be reaped by its parent.
func waitNoSurvivors(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		pids := survivors(t, marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survived the command: %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunReportsOutputAndExitCode(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			cases := []struct {
				script string
				code   int
				out    string
			}{
				{"echo hello", 0, "hello\n"},
				{"echo oops >&2; exit 3", 3, "oops\n"},
				{"pwd", 0, ws + "\n"},
				{"printf abc > f.txt && cat f.txt", 0, "abc"},
			}
			for _, c := range cases {
				var out bytes.Buffer
				res, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", c.script}, Workspace: ws, Output: &out})
				if err != nil {
					t.Fatalf("%q: %v", c.script, err)
				}
				if res.ExitCode != c.code || out.String() != c.out || res.TimedOut || res.Canceled {
					t.Errorf("%q: %+v output %q, want exit %d output %q", c.script, res, out.String(), c.code, c.out)
				}
			}
		})
	}
}

func TestRunRefusesWhatCannotStart(t *testing.T) {
	r := NewRunner(Report{Isolation: IsolationNone})
	for _, c := range []Command{
		{Workspace: t.TempDir()},
		{Args: []string{"true"}, Workspace: "relative/dir"},
		{Args: []string{"/does/not/exist"}, Workspace: t.TempDir()},
	} {
		if _, err := r.Run(context.Background(), c); !errors.Is(err, ErrStart) {
			t.Errorf("%+v: error %v, want ErrStart", c, err)
		}
	}
}

func TestRunKillsRunawayGroupAtTimeout(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			marker := sleepMarker()
			start := time.Now()
			res, err := r.Run(context.Background(), Command{
				Args:      []string{"sh", "-c", "sleep " + marker + " & sleep " + marker},
				Workspace: t.TempDir(),
				Timeout:   500 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.TimedOut || res.Canceled {
				t.Errorf("result %+v, want timed out", res)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v after a 500ms timeout", d)
			}
			waitNoSurvivors(t, marker)
		})
	}
}

func TestRunCancelEndsGroupWithinGrace(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			marker := sleepMarker()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			res, err := r.Run(ctx, Command{
				Args:      []string{"sh", "-c", "sleep " + marker + " & sleep " + marker},
				Workspace: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Canceled || res.TimedOut {
				t.Errorf("result %+v, want canceled", res)
			}
			// 2 s is the dispatcher's default grace for a cancelled tool.
			if d := time.Since(start); d > 300*time.Millisecond+2*time.Second {
				t.Errorf("returned %v after start, beyond the grace", d)
			}
			waitNoSurvivors(t, marker)
		})
	}
}

func TestRunSweepsBackgroundChildrenOnExit(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			marker := sleepMarker()
			start := time.Now()
			var out bytes.Buffer
			res, err := r.Run(context.Background(), Command{
				Args:      []string{"sh", "-c", "sleep " + marker + " & echo started"},
				Workspace: t.TempDir(),
				Output:    &out,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || out.String() != "started\n" {
				t.Errorf("result %+v output %q", res, out.String())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("waited %v for a background child", d)
			}
			waitNoSurvivors(t, marker)
		})
	}
}

// TestRunPassesOnlyAllowedEnvironment: the command's environment is an
// allow-list, so secrets under names no pattern guesses (MYSQL_PWD,
// REDIS_URL with a password, SENTRY_DSN, CI_JOB_JWT) do not reach it, nor
// does any other variable unless Options.Env names it.
func TestRunPassesOnlyAllowedEnvironment(t *testing.T) {
	t.Setenv("REIN_TEST_API_KEY", "sk-visible-secret-1")
	t.Setenv("REIN_TEST_TOKEN", "visible-secret-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "visible-secret-3")
	t.Setenv("MYSQL_PWD", "visible-secret-4")
	t.Setenv("REDIS_URL", "redis://:visible-secret-5@cache:6379")
	t.Setenv("SENTRY_DSN", "https://visible-secret-6@sentry.example/1")
	t.Setenv("CI_JOB_JWT", "visible-secret-7")
	t.Setenv("REIN_TEST_PLAIN", "visible-unlisted")
	t.Setenv("REIN_TEST_LISTED", "listed-value")
	t.Setenv("LC_TIME", "C")
	plain := map[string]*Runner{"plain": NewRunnerOptions(Report{Isolation: IsolationNone}, ModeWorkspaceWrite, Options{Env: []string{"REIN_TEST_LISTED"}})}
	if r := Detect(); r.Isolated() {
		plain["bwrap"] = NewRunnerOptions(r, ModeWorkspaceWrite, Options{Env: []string{"REIN_TEST_LISTED"}})
	}
	plain["full-access"] = NewRunnerOptions(Detect(), ModeFullAccess, Options{Env: []string{"REIN_TEST_LISTED"}})
	for name, r := range plain {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := r.Run(context.Background(), Command{
				Args: []string{"sh", "-c", "env"}, Workspace: t.TempDir(), Output: &out,
				Env: []string{"EXTRA=given"},
			})
			if err != nil {
				t.Fatal(err)
			}
			env := out.String()
			if strings.Contains(env, "visible-") {
				t.Errorf("a variable off the allow-list reached the command:\n%s", env)
			}
			for _, want := range []string{"REIN_TEST_LISTED=listed-value", "LC_TIME=C", "EXTRA=given", "PATH="} {
				if !strings.Contains(env, want) {
					t.Errorf("%s missing from the environment:\n%s", want, env)
				}
			}
		})
	}
}

func TestBwrapHasNoNetwork(t *testing.T) {
	r := bwrapRunner(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
		accepted <- struct{}{}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	var out bytes.Buffer
	_, err = r.Run(context.Background(), Command{
		Args:      []string{"sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"},
		Workspace: t.TempDir(), Output: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ifaces := strings.Fields(out.String()); len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("network interfaces in the sandbox: %q, want only lo", out.String())
	}

	out.Reset()
	script := fmt.Sprintf(`import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=2)
    print("connected")
except OSError as e:
    print("refused:", e)
`, port)
	res, err := r.Run(context.Background(), Command{
		Args:      []string{"sh", "-c", `command -v python3 >/dev/null || { echo no-python; exit 0; }; exec python3 -c "$0"`, script},
		Workspace: t.TempDir(), Output: &out, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	switch got := out.String(); {
	case strings.Contains(got, "no-python"):
		t.Log("python3 is not in the sandbox; the loopback connection was not tried")
	case !strings.HasPrefix(got, "refused:"):
		t.Errorf("connecting to the test's loopback listener: %q (%+v), want refused", got, res)
	}
	select {
	case <-accepted:
		t.Error("the listener accepted a connection from the sandbox")
	default:
	}
}

func TestBwrapWritesOnlyTheWorkspace(t *testing.T) {
	r := bwrapRunner(t)
	ws, outside := t.TempDir(), t.TempDir()
	etc := fmt.Sprintf("/etc/rein-sandbox-test-%d", rand.IntN(1_000_000))
	var out bytes.Buffer
	script := fmt.Sprintf(`echo in > %[1]s/inside.txt
{ echo out > %[2]s/outside.txt; } 2>/dev/null && echo wrote-outside
{ echo etc > %[3]s; } 2>/dev/null && echo wrote-etc
{ echo usr > /usr/rein-sandbox-test; } 2>/dev/null && echo wrote-usr
echo tmp > /tmp/private.txt && echo wrote-tmp
`, ws, outside, etc)
	_, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", script}, Workspace: ws, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(etc); os.Remove("/usr/rein-sandbox-test") })
	if b, err := os.ReadFile(filepath.Join(ws, "inside.txt")); err != nil || string(b) != "in\n" {
		t.Errorf("workspace write: %q, %v", b, err)
	}
	for _, p := range []string{filepath.Join(outside, "outside.txt"), etc, "/usr/rein-sandbox-test"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written from the sandbox", p)
		}
	}
	if got := out.String(); got != "wrote-tmp\n" {
		t.Errorf("sandbox reported %q, want only the private /tmp written", got)
	}
	if _, err := os.Stat("/tmp/private.txt"); err == nil {
		t.Error("the sandbox's /tmp is the host's")
	}
}

func TestReadOnlyModeKeepsTheWorkspaceButNotItsBindsFromWrites(t *testing.T) {
	r := bwrapRunner(t)
	ro := NewModeRunner(r.Report(), ModeReadOnly)
	ws, scratch := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`cat keep.txt
{ echo after > keep.txt; } 2>/dev/null && echo wrote-file
{ echo new > new.txt; } 2>/dev/null && echo created-file
rm -f keep.txt 2>/dev/null; [ -e keep.txt ] || echo removed-file
echo scratch > %s/s.txt && echo wrote-scratch
`, scratch)
	var out bytes.Buffer
	_, err := ro.Run(context.Background(), Command{Args: []string{"sh", "-c", script}, Workspace: ws,
		Binds: []Bind{{Path: scratch, Writable: true}}, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "before\nwrote-scratch\n"; got != want {
		t.Errorf("output %q, want %q: the workspace only readable, the writable bind written", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "keep.txt")); err != nil || string(b) != "before\n" {
		t.Errorf("keep.txt: %q, %v; want it unchanged", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
		t.Error("new.txt was created in the read-only workspace")
	}
}

func TestModeRunners(t *testing.T) {
	bwrap := Report{Isolation: IsolationBwrap, Bwrap: "/usr/bin/bwrap", Reason: "works"}
	none := Report{Isolation: IsolationNone, Reason: "no bwrap"}
	cases := []struct {
		name     string
		found    Report
		mode     Mode
		isolated bool
	}{
		{"default mode keeps bubblewrap", bwrap, "", true},
		{"workspace-write keeps bubblewrap", bwrap, ModeWorkspaceWrite, true},
		{"read-only keeps bubblewrap", bwrap, ModeReadOnly, true},
		{"full-access drops bubblewrap", bwrap, ModeFullAccess, false},
		{"full-access without bubblewrap", none, ModeFullAccess, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewModeRunner(c.found, c.mode)
			if got := r.Report().Isolated(); got != c.isolated {
				t.Errorf("isolated = %v, want %v (%s)", got, c.isolated, r.Report())
			}
			want := c.mode
			if want == "" {
				want = ModeWorkspaceWrite
			}
			if r.Mode() != want {
				t.Errorf("mode = %q, want %q", r.Mode(), want)
			}
		})
	}
}

func TestReadOnlyModeWithoutBubblewrapRefusesToRun(t *testing.T) {
	r := NewModeRunner(Report{Isolation: IsolationNone, Reason: "no bwrap"}, ModeReadOnly)
	ws := t.TempDir()
	_, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", "echo x > f"}, Workspace: ws})
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("error %v, want ErrStart naming the read-only mode", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "f")); err == nil {
		t.Error("the command ran and wrote the workspace")
	}
}

func TestFullAccessRunsOnTheHostWithAScrubbedEnvironment(t *testing.T) {
	t.Setenv("REIN_TEST_API_KEY", "sk-secret")
	r := NewModeRunner(Detect(), ModeFullAccess)
	ws, outside := t.TempDir(), t.TempDir()
	var out bytes.Buffer
	script := fmt.Sprintf(`echo out > %s/o.txt; echo "key=$REIN_TEST_API_KEY"`, outside)
	if _, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", script}, Workspace: ws, Output: &out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "o.txt")); err != nil {
		t.Errorf("full access could not write outside the workspace: %v", err)
	}
	if got := out.String(); got != "key=\n" {
		t.Errorf("output %q: the environment was not scrubbed", got)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeWorkspaceWrite, "read-only": ModeReadOnly,
		"workspace-write": ModeWorkspaceWrite, "full-access": ModeFullAccess} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"readonly", "Read-Only", "danger"} {
		if _, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) accepted it", in)
		}
	}
}
