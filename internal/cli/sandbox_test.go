package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/session"
)

// fakeSandbox makes rein see bubblewrap working, or not, whatever this
// machine has; nothing may run a command under it.
func fakeSandbox(t *testing.T, isolated bool) {
	t.Helper()
	rep := sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "bwrap was not found on PATH (test)"}
	if isolated {
		rep = sandbox.Report{Isolation: sandbox.IsolationBwrap, Bwrap: "/usr/bin/bwrap", Reason: "works (test)"}
	}
	prev := detectSandbox
	detectSandbox = func() sandbox.Report { return rep }
	t.Cleanup(func() { detectSandbox = prev })
}

func TestToolsBySandboxMode(t *testing.T) {
	const readOnly = `suppressed: the sandbox mode is read-only (it was owned by the capability "workspace")`
	type want struct {
		name   string
		in     bool
		reason string
	}
	tests := []struct {
		name     string
		bwrap    bool
		args     []string
		mode     string
		decision []want
	}{
		{
			name: "read-only takes the writing file tools and keeps exec in bubblewrap", bwrap: true,
			args: []string{"--sandbox", "read-only", "--exec"}, mode: "read-only",
			decision: []want{
				{"write_file", false, readOnly},
				{"edit_file", false, readOnly},
				{"read_file", true, "owned by the capability"},
				{"grep", true, "owned by the capability"},
				{"exec", true, "mounted: has_exec"},
				{"code_execution", true, "mounted: has_code"},
			},
		},
		{
			name: "read-only without bubblewrap has no exec and says why", bwrap: false,
			args: []string{"--sandbox", "read-only", "--exec"}, mode: "read-only",
			decision: []want{
				{"write_file", false, readOnly},
				{"edit_file", false, readOnly},
				{"list_dir", true, "owned by the capability"},
				{"exec", false, "the read-only sandbox mode runs commands only inside bubblewrap"},
				{"code_execution", false, "the read-only sandbox mode runs commands only inside bubblewrap"},
			},
		},
		{
			name: "workspace-write is the default", bwrap: true,
			args: []string{"--exec"}, mode: "workspace-write",
			decision: []want{
				{"write_file", true, "owned by the capability"},
				{"edit_file", true, "owned by the capability"},
				{"exec", true, "mounted: has_exec"},
			},
		},
		{
			name: "workspace-write without bubblewrap mounts exec to run after approval", bwrap: false,
			args: []string{"--sandbox", "workspace-write", "--exec"}, mode: "workspace-write",
			decision: []want{
				{"write_file", true, "owned by the capability"},
				{"exec", true, "mounted: has_exec"},
			},
		},
		{
			name: "full-access mounts exec without bubblewrap", bwrap: false,
			args: []string{"--sandbox", "full-access", "--exec"}, mode: "full-access",
			decision: []want{
				{"write_file", true, "owned by the capability"},
				{"exec", true, "mounted: has_exec"},
				{"code_execution", true, "mounted: has_code"},
			},
		},
		{
			name: "full-access offers exec by default", bwrap: false,
			args: []string{"--sandbox", "full-access"}, mode: "full-access",
			decision: []want{
				{"exec", true, "mounted: has_exec"},
			},
		},
		{
			name: "bubblewrap offers exec by default", bwrap: true,
			args: []string{}, mode: "workspace-write",
			decision: []want{
				{"exec", true, "mounted: has_exec"},
				{"code_execution", true, "mounted: has_code"},
			},
		},
		{
			name: "without bubblewrap exec is offered by default only where each call asks", bwrap: false,
			args: []string{"--approval", "never"}, mode: "workspace-write",
			decision: []want{
				{"exec", false, `which the approval policy "never" does not give`},
			},
		},
		{
			name: "--exec=false takes exec away", bwrap: true,
			args: []string{"--exec=false"}, mode: "workspace-write",
			decision: []want{
				{"exec", false, "has_exec is off"},
			},
		},
		{
			name: "--no-tool exec takes exec away", bwrap: true,
			args: []string{"--no-tool", "exec"}, mode: "workspace-write",
			decision: []want{
				{"exec", false, "suppressed"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeSandbox(t, tt.bwrap)
			r := toolsJSON(t, tt.args...)
			if r.Sandbox != tt.mode {
				t.Errorf("sandbox %q, want %q", r.Sandbox, tt.mode)
			}
			for _, w := range tt.decision {
				in, reason, ok := r.decision(w.name)
				if !ok || in != w.in || !strings.Contains(reason, w.reason) {
					t.Errorf("%s: in=%v reason %q (listed %v), want in=%v reason containing %q", w.name, in, reason, ok, w.in, w.reason)
				}
			}
		})
	}
}

func TestToolsAndDoctorSayTheSandboxMode(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, false)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"tools", "--workspace", t.TempDir(), "--sandbox", "read-only"},
			[]string{"sandbox: read-only: nothing writes the workspace", "write_file suppressed: the sandbox mode is read-only"}},
		{[]string{"tools", "--workspace", t.TempDir()},
			[]string{"sandbox: workspace-write: "}},
		{[]string{"doctor"},
			[]string{"sandbox mode workspace-write: ", "each after you approve it"}},
		{[]string{"doctor", "--sandbox", "full-access"},
			[]string{"sandbox mode full-access: commands run on the host without a sandbox and without asking"}},
		{[]string{"doctor", "--sandbox", "read-only"},
			[]string{"sandbox mode read-only: ", "exec and code_execution are off too"}},
	}
	for _, tt := range tests {
		code, stdout, stderr := runMain(t, context.Background(), tt.args...)
		if code != ExitCompleted {
			t.Fatalf("%v: exit %d, stderr %s", tt.args, code, stderr)
		}
		// The columns' padding is the tabwriter's business.
		flat := strings.Join(strings.Fields(stdout), " ")
		for _, w := range tt.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, stdout)
			}
		}
	}
}

func TestBadSandboxModeIsAUsageError(t *testing.T) {
	clearKeys(t)
	script := writeScript(t, "rounds:\n  - text: hi\n")
	for _, args := range [][]string{
		{"tools", "--workspace", t.TempDir(), "--sandbox", "readonly"},
		{"run", "--model", "scripted:" + script, "--sandbox", "danger", "x"},
		{"chat", "--model", "scripted:" + script, "--sandbox", "Full-Access"},
		{"doctor", "--sandbox", "none"},
		{"serve", "--stdio", "--sandbox", "readonly"},
	} {
		code, _, stderr := runMain(t, context.Background(), args...)
		if code != ExitUsage || !strings.Contains(stderr, "--sandbox") {
			t.Errorf("%v: exit %d stderr %q, want 2 naming --sandbox", args, code, stderr)
		}
	}
}

func TestFullAccessRunsExecWithoutAPause(t *testing.T) {
	clearKeys(t)
	// Without bubblewrap exec in workspace-write mode waits for approval:
	// full access is the user's approval given beforehand.
	fakeSandbox(t, false)
	tests := []struct {
		name     string
		args     []string
		want     int
		executed bool
	}{
		{"workspace-write pauses for approval", []string{"--sandbox", "workspace-write"}, ExitPaused, false},
		{"full-access runs at once", []string{"--sandbox", "full-access"}, ExitCompleted, true},
		{"full-access runs under the policy never", []string{"--sandbox", "full-access", "--approval", "never"}, ExitCompleted, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := writeScript(t, `rounds:
  - calls:
      - {id: e1, name: exec, args: {command: "echo ran > ran.txt && echo exec ran"}}
  - text: done
    expect:
      - result: {call: e1, contains: "exec ran"}
`)
			args := append([]string{"run", "--exec", "--model", "scripted:" + script, "--workspace", dir}, tt.args...)
			code, stdout, stderr := runMain(t, context.Background(), append(args, "go")...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.want, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran.txt")); (err == nil) != tt.executed {
				t.Errorf("the command ran: %v, want %v", err == nil, tt.executed)
			}
		})
	}
}

func TestReadOnlyRunCannotWriteTheWorkspace(t *testing.T) {
	clearKeys(t)
	if rep := sandbox.Detect(); !rep.Isolated() {
		t.Skipf("bubblewrap is not usable here, so read-only exec cannot run: %s", rep)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `rounds:
  - calls:
      - {id: w1, name: write_file, args: {path: new.txt, content: "x"}}
      - {id: e1, name: exec, args: {command: "cat keep.txt; echo after > keep.txt; echo x > new.txt"}}
  - text: could not write
    expect:
      - result: {call: w1, contains: "no tool named \"write_file\" here"}
      - result: {call: e1, contains: "before"}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--exec", "--sandbox", "read-only", "--model", "scripted:"+script, "--workspace", dir, "try to write")
	if code != ExitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "before\n" {
		t.Errorf("keep.txt is %q after a read-only run", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Error("new.txt was written in a read-only run")
	}
}
func TestServeAppliesAThreadsSandboxMode(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	dir := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: hi\n")
	st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request"}, dir: dir, logw: io.Discard, st: st}
	defer b.close()
	tests := []struct {
		thread, mode string
		writes       bool
	}{
		{"thread_ro", "read-only", false},
		{"thread_default", "", true},
		{"thread_ww", "workspace-write", true},
		{"thread_fa", "full-access", true},
	}
	for _, tt := range tests {
		o, _, err := b.setup(t.Context(), session.Thread{ID: tt.thread, Settings: session.ThreadConfig{Sandbox: tt.mode}})
		if err != nil {
			t.Fatalf("%s: %v", tt.thread, err)
		}
		for _, name := range []string{"write_file", "edit_file"} {
			if _, ok := o.Tools.Get(name); ok != tt.writes {
				t.Errorf("sandbox %q: %s mounted %v, want %v", tt.mode, name, ok, tt.writes)
			}
		}
		if _, ok := o.Tools.Get("read_file"); !ok {
			t.Errorf("sandbox %q: read_file not mounted", tt.mode)
		}
	}
}

// TestServeSandboxFlagIsTheThreadsDefault: rein serve --sandbox is the mode
// of threads that name none and the loosest any thread gets; a thread's own
// mode wins when it is as strict or stricter.
func TestServeSandboxFlagIsTheThreadsDefault(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	dir := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: hi\n")
	st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tests := []struct {
		flag, thread string
		writes       bool
	}{
		{"read-only", "", false},
		{"read-only", "workspace-write", false}, // a thread from a looser server is held to this one's mode
		{"read-only", "full-access", false},
		{"workspace-write", "", true},
		{"workspace-write", "read-only", false},
		{"", "", true}, // serveFlags built without the flag (chat): workspace-write
	}
	for _, tt := range tests {
		b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request", sandbox: tt.flag}, dir: dir, logw: io.Discard, st: st}
		o, _, err := b.setup(t.Context(), session.Thread{ID: "thread_x", Settings: session.ThreadConfig{Sandbox: tt.thread}})
		b.close()
		if err != nil {
			t.Fatalf("--sandbox %q, thread %q: %v", tt.flag, tt.thread, err)
		}
		if _, ok := o.Tools.Get("write_file"); ok != tt.writes {
			t.Errorf("--sandbox %q, thread %q: write_file mounted %v, want %v", tt.flag, tt.thread, ok, tt.writes)
		}
	}
}

// TestServeRefusesAThreadLooserThanItsSandbox: thread/start may ask for a
// stricter sandbox than rein serve's --sandbox, never a looser one.
func TestServeRefusesAThreadLooserThanItsSandbox(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: hi\n")
	for _, tt := range []struct {
		flag, thread string
		ok           bool
	}{
		{"read-only", "read-only", true},
		{"read-only", "workspace-write", false},
		{"read-only", "full-access", false},
		{"workspace-write", "read-only", true},
		{"workspace-write", "full-access", false},
		{"full-access", "full-access", true},
		{"workspace-write", "", true},
	} {
		b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request", sandbox: tt.flag}, dir: dir, logw: io.Discard}
		err := b.check(session.ThreadConfig{Sandbox: tt.thread})
		b.close()
		if (err == nil) != tt.ok {
			t.Errorf("--sandbox %s, thread %q: error %v, want ok %v", tt.flag, tt.thread, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--sandbox "+tt.thread) {
			t.Errorf("the error %q does not say how to allow it", err)
		}
	}
}

// TestServeSandboxFlag runs a turn through rein serve --stdio --sandbox
// read-only: the thread names no mode, so it has no write_file.
func TestServeSandboxFlag(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	dir := t.TempDir()
	script := writeScript(t, `rounds:
  - calls:
      - {id: w1, name: write_file, args: {path: new.txt, content: "x"}}
  - text: could not write
    expect:
      - result: {call: w1, contains: "no tool named \"write_file\" here"}
`)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb strings.Builder
		done <- mainIO(context.Background(), []string{"serve", "--stdio", "--sandbox", "read-only", "--model", "scripted:" + script,
			"--db", filepath.Join(dir, "rein.db"), "--workspace", dir}, inR, outW, &errb)
		outW.Close()
	}()
	c := &rpcClient{t: t, in: inW, lines: make(chan map[string]any, 256)}
	go func() {
		defer close(c.lines)
		dec := json.NewDecoder(outR)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				return
			}
			c.lines <- m
		}
	}()
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "write"}}})
	got := c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })["params"].(map[string]any)["turn"].(map[string]any)
	if got["status"] != "completed" || got["answer"] != "could not write" {
		t.Errorf("turn/completed %v", got)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Error("new.txt was written under --sandbox read-only")
	}
}
