package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// syncBuffer is a Partial writer the test can read while the tool writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func workspace(t *testing.T) *sandbox.Workspace {
	t.Helper()
	ws, err := sandbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

var plain = sandbox.NewRunner(sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "test"})

// runners returns the plain runner and, when it works here, bubblewrap.
func runners(t *testing.T) map[string]*sandbox.Runner {
	t.Helper()
	rs := map[string]*sandbox.Runner{"plain": plain}
	if r := sandbox.Detect(); r.Isolated() {
		rs["bwrap"] = sandbox.NewRunner(r)
	} else {
		t.Logf("bubblewrap cases skipped: %s", r)
	}
	return rs
}

func bwrap(t *testing.T) *sandbox.Runner {
	t.Helper()
	r := sandbox.Detect()
	if !r.Isolated() {
		t.Skipf("bubblewrap is not usable here, so exec's isolation cannot be tested: %s", r)
	}
	return sandbox.NewRunner(r)
}

func call(t *testing.T, ctx context.Context, tl tool.Tool, args any) (tool.Output, *syncBuffer) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	partial := &syncBuffer{}
	out, err := tl.Run(ctx, tool.Call{ID: "c1", Name: tl.Spec().Name, Args: b, Partial: partial})
	if err != nil {
		t.Fatalf("%s(%s): %v", tl.Spec().Name, b, err)
	}
	return out, partial
}

func TestExecRunsInWorkspace(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t)
			out, partial := call(t, context.Background(), Exec(ws, Options{Runner: r}),
				map[string]any{"command": "echo hello > f.txt && cat f.txt && pwd"})
			if out.Failed || !strings.HasPrefix(out.Text, "exit code 0 (") || !strings.Contains(out.Text, "\nhello\n"+ws.Dir()+"\n") {
				t.Errorf("output %+v", out)
			}
			if b, err := os.ReadFile(filepath.Join(ws.Dir(), "f.txt")); err != nil || string(b) != "hello\n" {
				t.Errorf("file written: %q, %v", b, err)
			}
			if partial.String() != "hello\n"+ws.Dir()+"\n" {
				t.Errorf("partial output %q", partial.String())
			}
			var meta result
			if err := json.Unmarshal(out.Meta, &meta); err != nil || meta.ExitCode != 0 || meta.Isolation == "" {
				t.Errorf("meta %s: %v", out.Meta, err)
			}
		})
	}
}

func TestExecReportsFailure(t *testing.T) {
	ws := workspace(t)
	out, _ := call(t, context.Background(), Exec(ws, Options{Runner: plain}), map[string]any{"command": "echo bad >&2; exit 7"})
	if !out.Failed || out.Text[:len("exit code 7")] != "exit code 7" || !strings.Contains(out.Text, "bad") {
		t.Errorf("output %+v", out)
	}
	out, _ = call(t, context.Background(), Exec(ws, Options{Runner: plain}), map[string]any{"command": "true"})
	if out.Failed || !strings.HasSuffix(out.Text, "\n(no output)") {
		t.Errorf("output %+v", out)
	}
}

func TestBadInputsAreClearErrorResults(t *testing.T) {
	ws := workspace(t)
	ex, code := Exec(ws, Options{Runner: plain}), CodeExecution(ws, Options{Runner: plain})
	for _, c := range []struct {
		tool tool.Tool
		args map[string]any
		want string
	}{
		{ex, map[string]any{"command": ""}, `exec needs a "command"`},
		{ex, map[string]any{"command": "  \n "}, `exec needs a "command"`},
		{code, map[string]any{"language": "ruby", "code": "puts 1"}, `cannot run "ruby": give "language" as one of go, python, sh`},
		{code, map[string]any{"language": "", "code": "x"}, `give "language" as one of`},
		{code, map[string]any{"language": "sh", "code": " "}, `needs "code"`},
	} {
		out, _ := call(t, context.Background(), c.tool, c.args)
		if !out.Failed || !strings.Contains(out.Text, c.want) {
			t.Errorf("%s %v: %+v, want a failure saying %q", c.tool.Spec().Name, c.args, out, c.want)
		}
	}
	if entries, _ := os.ReadDir(ws.Dir()); len(entries) != 0 {
		t.Errorf("bad inputs left files in the workspace: %v", entries)
	}
}

func TestExecCapsOutputKeepingHeadAndTail(t *testing.T) {
	ws := workspace(t)
	out, _ := call(t, context.Background(), Exec(ws, Options{Runner: plain, MaxOutput: 200}), map[string]any{"command": "seq 1 20000"})
	text := out.Text[strings.IndexByte(out.Text, '\n')+1:]
	if !strings.HasPrefix(text, "1\n2\n3\n") || !strings.HasSuffix(text, "19999\n20000\n") {
		t.Errorf("head or tail lost: %q", text)
	}
	total := 0
	for i := 1; i <= 20000; i++ {
		total += len(fmt.Sprint(i)) + 1
	}
	marker := fmt.Sprintf("[… %d bytes of output cut here …]", total-200)
	if !strings.Contains(text, marker) || len(text) > 200+len(marker)+2 {
		t.Errorf("want %q and at most 200 bytes kept, got %d bytes: %q", marker, len(text), text)
	}
}

func TestCappedKeepsHeadAndTailWhateverTheWrites(t *testing.T) {
	var whole bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&whole, "line %d é\n", i)
	}
	data := whole.Bytes()
	for _, limit := range []int{1, 2, 10, 101, 1000, len(data) * 2} {
		want := newCapped(limit)
		want.Write(data)
		for _, chunk := range []int{1, 3, 7, 64, 4096} {
			c := newCapped(limit)
			for b := data; len(b) > 0; {
				k := min(chunk, len(b))
				c.Write(b[:k])
				b = b[k:]
			}
			if c.String() != want.String() || c.cut() != want.cut() {
				t.Fatalf("limit %d chunk %d: %q, want %q", limit, chunk, c.String(), want.String())
			}
		}
		if limit >= len(data) && want.String() != string(data) {
			t.Errorf("limit %d: output changed though it fits", limit)
		}
		if limit < len(data) {
			half := max(limit/2, 1)
			s := want.String()
			if !strings.HasPrefix(string(data), strings.SplitN(s, "\n[…", 2)[0]) || want.cut() != len(data)-2*half {
				t.Errorf("limit %d: %q (cut %d)", limit, s, want.cut())
			}
		}
	}
}

func TestTimeoutIsClamped(t *testing.T) {
	o := Options{}.withDefaults()
	for _, c := range []struct {
		sec  int
		want time.Duration
		note bool
	}{
		{0, 30 * time.Second, false},
		{1, time.Second, false},
		{120, 120 * time.Second, false},
		{300, 300 * time.Second, false},
		{301, 300 * time.Second, true},
		{100000, 300 * time.Second, true},
		{-5, time.Second, true},
	} {
		got, note := clampTimeout(c.sec, o)
		if got != c.want || (note != "") != c.note {
			t.Errorf("clampTimeout(%d) = %v %q, want %v (note %v)", c.sec, got, note, c.want, c.note)
		}
	}
}

func TestApprovalOnlyWithoutSandbox(t *testing.T) {
	ws := workspace(t)
	for _, tl := range Tools(ws, Options{Runner: plain}) {
		if s := tl.Spec(); !s.NeedsApproval || s.Access != tool.Exclusive || !strings.Contains(s.Description, "without isolation") {
			t.Errorf("%s without a sandbox: %+v", s.Name, s)
		}
	}
	for _, tl := range Tools(ws, Options{Runner: sandbox.NewRunner(sandbox.Report{Isolation: sandbox.IsolationBwrap, Bwrap: "/usr/bin/bwrap"})}) {
		if s := tl.Spec(); s.NeedsApproval || s.Access != tool.Exclusive || !strings.Contains(s.Description, "no network") {
			t.Errorf("%s in bubblewrap: %+v", s.Name, s)
		}
		if s := tl.Spec(); s.Timeout <= MaxTimeout {
			t.Errorf("%s: dispatcher deadline %v would cut a %v command short", s.Name, s.Timeout, MaxTimeout)
		}
	}
}

func TestExecInterruptKeepsPartialOutput(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type done struct {
				out     tool.Output
				partial *syncBuffer
			}
			partial := &syncBuffer{}
			ch := make(chan done, 1)
			go func() {
				out, _ := Exec(ws, Options{Runner: r}).Run(ctx, tool.Call{Args: json.RawMessage(`{"command":"echo first; sleep 30; echo second"}`), Partial: partial})
				ch <- done{out, partial}
			}()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(partial.String(), "first") {
				if time.Now().After(deadline) {
					t.Fatal("no partial output")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			start := time.Now()
			select {
			case d := <-ch:
				if !strings.HasPrefix(d.out.Text, "interrupted") || !strings.Contains(d.out.Text, "first") || strings.Contains(d.out.Text, "second") {
					t.Errorf("output %+v", d.out)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("returned %v after cancellation, beyond the 2 s grace", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("exec did not return after cancellation")
			}
		})
	}
}

// sleepMarker is a sleep argument unique to one test, to find its
// processes in /proc.
func sleepMarker() string { return fmt.Sprintf("100.%06d", rand.IntN(1_000_000)) }

func survivors(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "sleep\x00"+marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestExecKillsRunawayAtTimeout(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			marker := sleepMarker()
			start := time.Now()
			out, _ := call(t, context.Background(), Exec(workspace(t), Options{Runner: r}),
				map[string]any{"command": "echo started; sleep " + marker + " & sleep " + marker, "timeout": 1})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("a 1 s timeout took %v", d)
			}
			if !out.Failed || !strings.HasPrefix(out.Text, "timed out after 1s") || !strings.Contains(out.Text, "started") {
				t.Errorf("output %+v", out)
			}
			for deadline := time.Now().Add(3 * time.Second); len(survivors(marker)) > 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("processes survived the timeout: %v", survivors(marker))
				}
			}
		})
	}
}

func TestExecDoesNotSeeSecrets(t *testing.T) {
	t.Setenv("REIN_EXEC_TEST_TOKEN", "tok-must-not-leak")
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	// Names no pattern would guess: the environment is an allow-list.
	t.Setenv("MYSQL_PWD", "pw-must-not-leak")
	t.Setenv("REDIS_URL", "redis://:pw-must-not-leak@cache:6379")
	t.Setenv("SENTRY_DSN", "https://must-not-leak@sentry.example/1")
	t.Setenv("CI_JOB_JWT", "jwt-must-not-leak")
	rs := runners(t)
	rs["full-access"] = sandbox.NewModeRunner(sandbox.Detect(), sandbox.ModeFullAccess)
	for name, r := range rs {
		t.Run(name, func(t *testing.T) {
			out, _ := call(t, context.Background(), Exec(workspace(t), Options{Runner: r}), map[string]any{"command": "env"})
			if strings.Contains(out.Text, "must-not-leak") || !strings.Contains(out.Text, "PATH=") {
				t.Errorf("environment seen by exec:\n%s", out.Text)
			}
		})
	}
}

func TestExecInBwrapHasNoNetwork(t *testing.T) {
	r := bwrap(t)
	out, _ := call(t, context.Background(), Exec(workspace(t), Options{Runner: r}),
		map[string]any{"command": "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; ls /sys/class/net 2>/dev/null"})
	if got := strings.Fields(out.Text[strings.IndexByte(out.Text, '\n')+1:]); len(got) != 1 || got[0] != "lo" {
		t.Errorf("network interfaces seen by exec: %q, want only lo", out.Text)
	}
}

func TestExecInBwrapCannotWriteOutsideWorkspace(t *testing.T) {
	r := bwrap(t)
	ws, outside := workspace(t), t.TempDir()
	home, _ := os.UserHomeDir()
	probe := fmt.Sprintf("rein-exec-test-%d", rand.IntN(1_000_000))
	targets := []string{filepath.Join(outside, probe), filepath.Join("/etc", probe), filepath.Join(home, probe)}
	var script strings.Builder
	for _, p := range targets {
		fmt.Fprintf(&script, "{ echo x > %s; } 2>/dev/null && echo WROTE %s\n", p, p)
	}
	script.WriteString("echo ok > inside.txt\n")
	out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}), map[string]any{"command": script.String()})
	if strings.Contains(out.Text, "WROTE") {
		t.Errorf("exec wrote outside the workspace: %s", out.Text)
	}
	for _, p := range targets {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s exists on the host", p)
		}
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "inside.txt")); err != nil {
		t.Errorf("the workspace is not writable: %v (%s)", err, out.Text)
	}
}

func TestApprovalBySandboxMode(t *testing.T) {
	ws := workspace(t)
	bw := sandbox.Report{Isolation: sandbox.IsolationBwrap, Bwrap: "/usr/bin/bwrap"}
	none := sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "test"}
	cases := []struct {
		name  string
		r     *sandbox.Runner
		needs bool
		note  string
	}{
		{"read-only in bubblewrap runs without asking", sandbox.NewModeRunner(bw, sandbox.ModeReadOnly), false, "workspace read-only"},
		{"workspace-write on the host asks", sandbox.NewModeRunner(none, sandbox.ModeWorkspaceWrite), true, "without isolation"},
		{"full-access never asks, bubblewrap or not", sandbox.NewModeRunner(bw, sandbox.ModeFullAccess), false, "full access"},
		{"full-access without bubblewrap never asks", sandbox.NewModeRunner(none, sandbox.ModeFullAccess), false, "full access"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, tl := range Tools(ws, Options{Runner: c.r}) {
				s := tl.Spec()
				if s.NeedsApproval != c.needs {
					t.Errorf("%s NeedsApproval = %v, want %v", s.Name, s.NeedsApproval, c.needs)
				}
				if !strings.Contains(s.Description, c.note) {
					t.Errorf("%s description lacks %q: %s", s.Name, c.note, s.Description)
				}
			}
		})
	}
}

func TestReadOnlyExecCannotWriteTheWorkspace(t *testing.T) {
	r := sandbox.NewModeRunner(bwrap(t).Report(), sandbox.ModeReadOnly)
	ws := workspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "keep.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}), map[string]any{"command": "cat keep.txt; echo after > keep.txt; echo new > new.txt"})
	if !out.Failed || !strings.Contains(out.Text, "before") {
		t.Errorf("exec in read-only mode: %+v, want the file read and the writes failing", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir(), "keep.txt")); string(b) != "before\n" {
		t.Errorf("keep.txt is %q after a read-only exec", b)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "new.txt")); err == nil {
		t.Error("a read-only exec created new.txt")
	}
	var meta result
	if err := json.Unmarshal(out.Meta, &meta); err != nil || meta.Sandbox != string(sandbox.ModeReadOnly) {
		t.Errorf("meta %s: want sandbox read-only", out.Meta)
	}
}

func TestReadOnlyCodeExecutionWritesOnlyItsDirectory(t *testing.T) {
	r := sandbox.NewModeRunner(bwrap(t).Report(), sandbox.ModeReadOnly)
	ws := workspace(t)
	code := `echo scratch > here.txt && cat here.txt
{ echo x > "$WORKSPACE/w.txt"; } 2>/dev/null && echo WROTE-WORKSPACE
true`
	out, _ := call(t, context.Background(), CodeExecution(ws, Options{Runner: r}), map[string]any{"language": "sh", "code": code})
	if out.Failed || !strings.Contains(out.Text, "scratch") || strings.Contains(out.Text, "WROTE-WORKSPACE") {
		t.Errorf("code_execution in read-only mode: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "w.txt")); err == nil {
		t.Error("a read-only snippet wrote the workspace")
	}
}

func TestReadOnlyExecWithoutBubblewrapFailsClosed(t *testing.T) {
	r := sandbox.NewModeRunner(sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "test"}, sandbox.ModeReadOnly)
	ws := workspace(t)
	out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}), map[string]any{"command": "echo x > f.txt"})
	if !out.Failed || !strings.Contains(out.Text, "read-only") {
		t.Errorf("exec: %+v, want a failure naming the read-only mode", out)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "f.txt")); err == nil {
		t.Error("the command ran on the host in read-only mode")
	}
}

// TestExecCannotCreateGitPaths: exec in bubblewrap cannot create what the
// deny list could not mask because it did not exist: a hooks directory,
// commondir, or a whole .git.
func TestExecCannotCreateGitPaths(t *testing.T) {
	r := bwrap(t)
	for _, tc := range []struct {
		name, setup, command, absent string
	}{
		{"hooks", "mkdir -p .git/objects && echo x > .git/HEAD", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit", ".git/hooks"},
		{"commondir", "mkdir -p .git/objects && echo x > .git/HEAD", "echo /tmp/x > .git/commondir", ".git/commondir"},
		{"a new repository", "true", "mkdir .git && echo '[core]' > .git/config", ".git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspace(t)
			setup := osexec.Command("sh", "-c", tc.setup)
			setup.Dir = ws.Dir()
			if out, err := setup.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			out, _ := call(t, context.Background(), Exec(ws, Options{Runner: r}), map[string]any{"command": tc.command})
			if _, err := os.Lstat(filepath.Join(ws.Dir(), tc.absent)); err == nil {
				t.Errorf("%s was created: %s", tc.absent, out.Text)
			}
		})
	}
}

// TestExecLeavesNoDaemon: a process that left the command's group does
// not outlive the call, in full-access mode too.
func TestExecLeavesNoDaemon(t *testing.T) {
	rs := runners(t)
	rs["full-access"] = sandbox.NewModeRunner(sandbox.Detect(), sandbox.ModeFullAccess)
	for name, r := range rs {
		t.Run(name, func(t *testing.T) {
			marker := sleepMarker()
			out, _ := call(t, context.Background(), Exec(workspace(t), Options{Runner: r}),
				map[string]any{"command": "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & sleep 0.2; echo started"})
			if out.Failed || !strings.Contains(out.Text, "started") {
				t.Errorf("output %+v", out)
			}
			if pids := survivors(marker); len(pids) > 0 {
				t.Errorf("processes outlived the call: %v", pids)
			}
		})
	}
}

// TestResultSaysWhatIsNotEnforced: a command that ran without bubblewrap
// says in its result's meta what only the sandbox would have kept from it.
func TestResultSaysWhatIsNotEnforced(t *testing.T) {
	for name, r := range runners(t) {
		t.Run(name, func(t *testing.T) {
			out, _ := call(t, context.Background(), Exec(workspace(t), Options{Runner: r}), map[string]any{"command": "true"})
			var meta result
			if err := json.Unmarshal(out.Meta, &meta); err != nil {
				t.Fatal(err)
			}
			if got, want := len(meta.Unenforced) > 0, !r.Report().Isolated(); got != want || (want && meta.Unenforced[0] != "network") {
				t.Errorf("meta %s: unenforced listed %v, want %v", out.Meta, got, want)
			}
		})
	}
}
