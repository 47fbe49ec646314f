package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hostReport is what Detect finds on a machine without bubblewrap: the
// limits of commands run on the host.
func hostReport() Report {
	return detect(context.Background(), func(name string) (string, error) {
		if name == "bwrap" {
			return "", errors.New("not found")
		}
		return exec.LookPath(name)
	})
}

// limitRunners returns the runners whose commands run under limits o:
// on the host with prlimit, and in bubblewrap with prlimit, each when it
// works here.
func limitRunners(t *testing.T, o Options) map[string]*Runner {
	t.Helper()
	rs := map[string]*Runner{}
	if h := hostReport(); h.Prlimit != "" {
		rs["plain"] = NewRunnerOptions(h, ModeWorkspaceWrite, o)
	} else {
		t.Logf("host cases skipped: %s", h.LimitsReason)
	}
	if r := Detect(); r.Isolated() && r.Prlimit != "" {
		rs["bwrap"] = NewRunnerOptions(r, ModeWorkspaceWrite, o)
	} else {
		t.Logf("bubblewrap cases skipped: %s", r)
	}
	if len(rs) == 0 {
		t.Skip("no runner can set limits here: prlimit (util-linux) is missing or does not work")
	}
	return rs
}

// runOut runs script with sh -c in ws and returns the result and output.
func runOut(t *testing.T, r *Runner, ws string, timeout time.Duration, script string, env ...string) (Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", script}, Workspace: ws,
		Output: &out, Timeout: timeout, Env: env})
	if err != nil {
		t.Fatalf("%q: %v", script, err)
	}
	return res, out.String()
}

// limitsOf parses /proc/self/limits into soft and hard values by name.
func limitsOf(t *testing.T, text string) map[string][2]string {
	t.Helper()
	m := map[string][2]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(line, "Max ") {
			continue
		}
		// "Max cpu time  7  8  seconds": the name is everything before
		// the two values.
		for i := 1; i+1 < len(f); i++ {
			if isLimitValue(f[i]) && isLimitValue(f[i+1]) {
				m[strings.Join(f[:i], " ")] = [2]string{f[i], f[i+1]}
				break
			}
		}
	}
	return m
}

func isLimitValue(s string) bool {
	if s == "unlimited" {
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func TestDefaultLimitsAreSet(t *testing.T) {
	for name, r := range limitRunners(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			res, out := runOut(t, r, t.TempDir(), 7*time.Second, "cat /proc/self/limits")
			if res.ExitCode != 0 {
				t.Fatalf("%+v %s", res, out)
			}
			got := limitsOf(t, out)
			want := map[string][2]string{
				"Max data size":      {"2147483648", "2147483648"},
				"Max cpu time":       {"7", "8"},
				"Max file size":      {"1073741824", "1073741824"},
				"Max open files":     {"1024", "1024"},
				"Max core file size": {"0", "0"},
			}
			if r.ProcLimit() {
				want["Max processes"] = [2]string{"1024", "1024"}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v\n%s", k, got[k], v, out)
				}
			}
			if !r.ProcLimit() && got["Max processes"] == [2]string{"1024", "1024"} {
				t.Errorf("the process limit is set where it does not bind as a sandbox budget: %s", r.Report().LimitsReason)
			}
		})
	}
}

func TestLimitsOptions(t *testing.T) {
	o := Options{Limits: Limits{Memory: -1, CPU: 3 * time.Second, FileSize: 4096, OpenFiles: 64, Procs: 100}}
	for name, r := range limitRunners(t, o) {
		t.Run(name, func(t *testing.T) {
			_, out := runOut(t, r, t.TempDir(), time.Minute, "cat /proc/self/limits")
			got := limitsOf(t, out)
			want := map[string][2]string{
				"Max cpu time":   {"3", "4"},
				"Max file size":  {"4096", "4096"},
				"Max open files": {"64", "64"},
			}
			if r.ProcLimit() {
				want["Max processes"] = [2]string{"100", "100"}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v\n%s", k, got[k], v, out)
				}
			}
			if got["Max data size"][0] == "2147483648" {
				t.Errorf("a negative Memory still set the default: %v", got["Max data size"])
			}
		})
	}
}

func TestMemoryLimitStopsABigAllocation(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("the test binary cannot run itself: %v", err)
	}
	for name, r := range limitRunners(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			res, err := r.Run(context.Background(), Command{
				Args:      []string{exe},
				Workspace: t.TempDir(),
				Binds:     []Bind{{Path: filepath.Dir(exe)}},
				Env:       []string{helperEnv + "=alloc"},
				Output:    &out,
				Timeout:   30 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			text := out.String()
			if !strings.Contains(text, "allocating 3 GiB") {
				t.Fatalf("the helper did not start: %+v %s", res, text)
			}
			// Go says "out of memory"; built with -race, ThreadSanitizer
			// says "failed to allocate".
			if res.ExitCode == 0 || strings.Contains(text, "allocated") ||
				(!strings.Contains(text, "out of memory") && !strings.Contains(text, "failed to allocate")) {
				t.Errorf("a 3 GiB allocation under a 2 GiB limit: %+v %s", res, text)
			}
			if res.TimedOut || res.Duration > 20*time.Second {
				t.Errorf("took %v", res.Duration)
			}
		})
	}
}

func TestCPULimitStopsASpinner(t *testing.T) {
	for name, r := range limitRunners(t, Options{Limits: Limits{CPU: time.Second}}) {
		t.Run(name, func(t *testing.T) {
			res, out := runOut(t, r, t.TempDir(), 30*time.Second, "while :; do :; done")
			if res.TimedOut || !strings.Contains(res.Limit, "CPU time limit (1 s per process)") {
				t.Errorf("result %+v output %q, want stopped by the CPU limit", res, out)
			}
			// 1 s of CPU; the machine may be busy, but not 15 times over.
			if res.Duration > 15*time.Second {
				t.Errorf("a 1 s CPU limit took %v", res.Duration)
			}
		})
	}
}

func TestCPULimitDefaultsToTheTimeout(t *testing.T) {
	l := Limits{}.withDefaults()
	if got := l.cpuSeconds(1500 * time.Millisecond); got != 2 {
		t.Errorf("CPU limit for 1.5 s = %d s, want 2", got)
	}
	if got := l.cpuSeconds(0); got != 0 {
		t.Errorf("CPU limit without a timeout = %d s, want none", got)
	}
	if got := (Limits{CPU: -1}).cpuSeconds(time.Minute); got != 0 {
		t.Errorf("CPU -1 = %d s, want none", got)
	}
}

func TestFileSizeLimitStopsABigWrite(t *testing.T) {
	for name, r := range limitRunners(t, Options{}) {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			// A 2 GiB file: one MiB written after 2047 MiB of hole, so the
			// test needs no disk when the limit does not bite.
			res, out := runOut(t, r, ws, 30*time.Second, "dd if=/dev/zero of=big bs=1M seek=2047 count=1 2>&1")
			if res.ExitCode == 0 || !strings.Contains(res.Limit, "file size limit (1 GiB per file)") {
				t.Errorf("result %+v output %q, want stopped by the file size limit", res, out)
			}
			if fi, err := os.Stat(filepath.Join(ws, "big")); err == nil && fi.Size() > 1<<30 {
				t.Errorf("big is %d bytes", fi.Size())
			}
		})
	}
	for name, r := range limitRunners(t, Options{Limits: Limits{FileSize: 1 << 20}}) {
		t.Run(name+"/written", func(t *testing.T) {
			ws := t.TempDir()
			res, out := runOut(t, r, ws, 30*time.Second, "head -c 3000000 /dev/zero > f")
			if res.ExitCode == 0 || !strings.Contains(res.Limit, "file size limit (1 MiB per file)") {
				t.Errorf("result %+v output %q", res, out)
			}
			if fi, err := os.Stat(filepath.Join(ws, "f")); err != nil || fi.Size() != 1<<20 {
				t.Errorf("f: %v, %v; want 1 MiB written", fi, err)
			}
		})
	}
}

// procLimitRunner returns a bubblewrap runner whose process limit binds,
// and a workspace for it. Root is exempt from the limit, so as root the
// runner starts bwrap as nobody, in a workspace nobody owns.
func procLimitRunner(t *testing.T, o Options) (*Runner, string) {
	t.Helper()
	r := Detect()
	if !r.Isolated() || r.Prlimit == "" {
		t.Skipf("no sandbox with limits here: %s", r)
	}
	if r.ProcLimit {
		return NewRunnerOptions(r, ModeWorkspaceWrite, o), t.TempDir()
	}
	if os.Getuid() != 0 {
		t.Skipf("the process limit does not bind here: %s", r.LimitsReason)
	}
	ws, err := os.MkdirTemp("", "rein-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	if err := errors.Join(os.Chmod(ws, 0o755), os.Chown(ws, 65534, 65534)); err != nil {
		t.Fatal(err)
	}
	r.ProcLimit = true
	run := NewRunnerOptions(r, ModeWorkspaceWrite, o)
	run.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	if res, out := runOut(t, run, ws, 10*time.Second, "echo ok"); res.ExitCode != 0 || out != "ok\n" {
		t.Skipf("rein runs as root, which the process limit exempts, and bwrap does not work as nobody here either: %+v %q", res, out)
	}
	return run, ws
}

// limited is an io.Writer that keeps the first bytes written.
type limited struct {
	mu sync.Mutex
	b  []byte
}

func (l *limited) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// countMarked counts the shells whose command line holds marker: the
// bomb's processes, not bwrap's two, whose command lines hold it too.
func countMarked(marker string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if prog, _, _ := bytes.Cut(b, []byte{0}); filepath.Base(string(prog)) != "bwrap" {
			n++
		}
	}
	return n
}

func TestProcessLimitContainsAForkBomb(t *testing.T) {
	const procs = 64
	r, ws := procLimitRunner(t, Options{Limits: Limits{Procs: procs}})
	marker := fmt.Sprintf("rein-fork-bomb-%06d", rand.IntN(1_000_000))
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n := int64(countMarked(marker)); n > peak.Load() {
				peak.Store(n)
			}
		}
	}()
	out := &limited{}
	const timeout = 3 * time.Second
	start := time.Now()
	// The classic bomb, in bash when there is one. $0 is the marker, so
	// every fork of the bomb carries it.
	res, err := r.Run(context.Background(), Command{
		Args: []string{"sh", "-c", `command -v bash >/dev/null && exec bash -c ':(){ :|:& };:; exec sleep 30' "$0"
b() { b & b & wait; }; b`, marker},
		Workspace: ws,
		Output:    out,
		Timeout:   timeout,
	})
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	// bash retries a fork that fails, so its bomb lasts until the
	// timeout; dash gives up, so without bash the bomb may collapse
	// before. Either way the call must be back by then.
	if _, err := exec.LookPath("bash"); err == nil && !res.TimedOut {
		t.Errorf("the bash bomb ended before the timeout: %+v %q", res, out.b)
	}
	if res.Canceled || elapsed > timeout+5*time.Second {
		t.Errorf("a fork bomb with a %v timeout returned after %v: %+v", timeout, elapsed, res)
	}
	if p := peak.Load(); p > procs {
		t.Errorf("%d processes of the bomb at once, above the limit of %d", p, procs)
	} else {
		t.Logf("at most %d processes of the bomb seen at once (limit %d); output starts %q", p, procs, firstLine(string(out.b)))
	}
	if !strings.Contains(string(out.b), "fork") {
		t.Errorf("no fork failed: %q", out.b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for countMarked(marker) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the bomb survived", countMarked(marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDetectWithoutPrlimit(t *testing.T) {
	if !Detect().Isolated() {
		t.Skipf("bubblewrap is not usable here: %s", Detect())
	}
	r := detect(context.Background(), func(name string) (string, error) {
		if name == "prlimit" {
			return "", errors.New("not found")
		}
		return exec.LookPath(name)
	})
	if !r.Isolated() || r.Prlimit != "" || r.ProcLimit || !strings.Contains(r.LimitsReason, "util-linux") {
		t.Errorf("report %+v, want isolation without limits, saying to install util-linux", r)
	}
	run := NewRunner(r)
	if l, ok := run.Limits(); ok || l.Memory != DefaultMemory {
		t.Errorf("Limits() = %+v, %v", l, ok)
	}
	if d := run.DescribeLimits(); !strings.Contains(d, "without limits") {
		t.Errorf("DescribeLimits() = %q", d)
	}
	if res, out := runOut(t, run, t.TempDir(), 5*time.Second, "echo ok"); res.ExitCode != 0 || out != "ok\n" {
		t.Errorf("%+v %q", res, out)
	}
}

func TestDetectReportsLimits(t *testing.T) {
	r := Detect()
	if !r.Isolated() || r.Prlimit == "" {
		t.Skipf("no sandbox with limits here: %s", r)
	}
	t.Logf("%s", r)
	if r.ProcLimit != (r.LimitsReason == limitsAll) {
		t.Errorf("ProcLimit %v with reason %q", r.ProcLimit, r.LimitsReason)
	}
	if os.Getuid() == 0 && r.ProcLimit {
		t.Errorf("as root the process limit cannot bind, yet the report says it does: %+v", r)
	}
	full := NewModeRunner(r, ModeFullAccess)
	if full.ProcLimit() || full.Report().Prlimit == "" || full.Report().LimitsReason != limitsHost {
		t.Errorf("full access: %+v", full.Report())
	}
}

func TestDescribeLimits(t *testing.T) {
	got := Limits{}.describe(true)
	for _, want := range []string{"2 GiB of memory", "as much CPU time as its timeout", "files up to 1 GiB", "1024 open files", "at most 1024 processes"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if got := (Limits{Memory: -1, CPU: 5 * time.Second}).describe(false); strings.Contains(got, "memory") || !strings.Contains(got, "5 s of CPU") || strings.Contains(got, "processes") {
		t.Errorf("describe = %q", got)
	}
	for n, want := range map[int64]string{2 << 30: "2 GiB", 1536 << 10: "1536 KiB", 1000: "1000 bytes", 1 << 20: "1 MiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPrlimitArgsStayUnderTheHardLimit(t *testing.T) {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err != nil || cur.Max == ^uint64(0) {
		t.Skipf("no hard limit on open files here (%v)", err)
	}
	args := prlimitArgs("prlimit", Limits{OpenFiles: int(cur.Max) + 100}.withDefaults().resources(0, false))
	want := fmt.Sprintf("--nofile=%d:%d", cur.Max, cur.Max)
	if !strings.Contains(strings.Join(args, " "), want) {
		t.Errorf("args %v lack %s", args, want)
	}
}
