package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// clearKeys makes the environment look like a fresh machine with no
// provider: no keys, and config, data and home in temporary directories,
// so a developer's own config or store never changes what a test sees.
func clearKeys(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "DEEPSEEK_BASE_URL", "REIN_DB"} {
		t.Setenv(k, "")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
}

func runMain(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	// An empty standard input, not the test process's: rein run reads a
	// stdin that is not a terminal.
	code := mainIO(ctx, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunWithoutAnyKeyExitsTwoAndPointsAtDemo(t *testing.T) {
	clearKeys(t)
	code, _, stderr := runMain(t, context.Background(), "run", "hello")
	if code != ExitUsage || !strings.Contains(stderr, "rein demo") || !strings.Contains(stderr, "OPENAI_API_KEY") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	clearKeys(t)
	script := writeScript(t, "rounds:\n  - text: hi\n")
	for _, args := range [][]string{
		{"run"},
		{"run", "--max-rounds", "99", "--model", "scripted:" + script, "x"},
		{"run", "--model", "nope:x", "x"},
		{"run", "--model", "scripted:/does/not/exist.yaml", "x"},
		{"run", "--model", "scripted:" + script, "--workspace", "/does/not/exist", "x"},
		{"run", "--unknown-flag", "x"},
		{"frobnicate"},
	} {
		if code, _, stderr := runMain(t, context.Background(), args...); code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d stderr %q, want 2 with a message", args, code, stderr)
		}
	}
}

func TestRunScriptedJSONLines(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o644)
	script := writeScript(t, `rounds:
  - calls:
      - {name: read_file, args: {path: a.txt}}
      - {name: read_file, args: {path: b.txt}}
  - text: alpha and beta
    expect:
      - result: {tool: read_file, contains: beta}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--model", "scripted:"+script, "--workspace", dir, "read both")
	if code != ExitCompleted {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	types := map[string]int{}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %q", i+1, l)
		}
		typ, _ := m["type"].(string)
		if typ == "" {
			t.Fatalf("line %d has no type: %q", i+1, l)
		}
		types[typ]++
	}
	var last map[string]any
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if last["type"] != "outcome" || last["status"] != "completed" || last["stop_reason"] != "finished" ||
		last["answer"] != "alpha and beta" || last["rounds"] != 2.0 || last["tool_steps"] != 1.0 || last["thread_id"] == "" || last["turn_id"] == "" {
		t.Errorf("outcome line %v", last)
	}
	if types["tool_started"] != 2 || types["result"] != 2 || types["turn_completed"] != 1 {
		t.Errorf("event counts %v", types)
	}
}

func TestExitCodes(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	tests := []struct {
		name   string
		script string
		ctx    func() (context.Context, context.CancelFunc)
		want   int
	}{
		{"failed turn exits 1", "rounds:\n  - error: {status: 401, message: bad key}\n", nil, ExitFailed},
		{"paused turn exits 3", "rounds:\n  - calls:\n      - {name: ask_user, args: {questions: [{prompt: \"Which city?\"}]}}\n", nil, ExitPaused},
		// The answer streams for a minute; the interrupt comes after 2 s,
		// well after the command's setup even on a loaded machine.
		{"interrupted turn exits 130", "rounds:\n  - {text: " + strings.Repeat("slow ", 240) + ", chunk: 1, delay: 50ms}\n", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2*time.Second)
		}, ExitInterrupted},
		{"unused script rounds fail the run", "rounds:\n  - text: hi\n  - text: never\n", nil, ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			code, stdout, stderr := runMain(t, ctx, "run", "--model", "scripted:"+writeScript(t, tt.script), "--workspace", dir, "go")
			if code != tt.want {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.want, stdout, stderr)
			}
		})
	}
}

func TestDemoRunsOfflineAndSaysItIsScripted(t *testing.T) {
	clearKeys(t)
	code, stdout, stderr := runMain(t, context.Background(), "demo")
	if code != ExitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"scripted", "▸ list_dir", "▸ grep", "▸ read_file", "0.0.0.0:8420", "OPS-311", "completed · finished · 3 rounds · 2 tool steps"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
	// Its store is removed at the end: no hint to continue its thread.
	if strings.Contains(stderr, "continue with") || !strings.Contains(stderr, "removed now") {
		t.Errorf("demo stderr %q: want no hint to continue a removed thread", stderr)
	}
}

func TestDemoJSONEndsWithTheOutcome(t *testing.T) {
	clearKeys(t)
	code, stdout, _ := runMain(t, context.Background(), "demo", "--json")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != ExitCompleted || !strings.HasPrefix(lines[len(lines)-1], `{"type":"outcome","status":"completed"`) {
		t.Errorf("exit %d, last line %s", code, lines[len(lines)-1])
	}
	if strings.Contains(stdout, "rein demo —") {
		t.Error("the human header leaked into --json output")
	}
}

func TestRunMountsExecWhenAskedFor(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, `rounds:
  - calls:
      - {id: e1, name: exec, args: {command: "echo hello from exec"}}
  - text: ran it
    expect:
      - result: {call: e1, contains: "hello from exec"}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--exec", "--model", "scripted:"+script, "--workspace", dir, "run echo")
	if sandbox.Detect().Isolation == sandbox.IsolationBwrap {
		if code != ExitCompleted {
			t.Fatalf("with bubblewrap: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return
	}
	// Without a sandbox exec needs approval: a run that cannot ask pauses.
	if code != ExitPaused {
		t.Fatalf("without a sandbox: exit %d, want %d (paused for approval)\n%s\n%s", code, ExitPaused, stdout, stderr)
	}
}

// TestRunWithoutExecHasNoExec: exec is offered by default where it can
// be (sandbox_test.go); --exec=false and --no-tool exec take it away.
func TestRunWithoutExecHasNoExec(t *testing.T) {
	clearKeys(t)
	script := writeScript(t, `rounds:
  - calls:
      - {id: e1, name: exec, args: {command: "echo hi"}}
  - text: no exec here
    expect:
      - result: {call: e1, contains: "no tool named \"exec\" here"}
`)
	for _, off := range [][]string{{"--exec=false"}, {"--no-tool", "exec"}} {
		args := append([]string{"run", "--model", "scripted:" + script, "--workspace", t.TempDir()}, off...)
		if code, stdout, stderr := runMain(t, context.Background(), append(args, "x")...); code != ExitCompleted {
			t.Fatalf("%v: exit %d\n%s\n%s", off, code, stdout, stderr)
		}
	}
}

// TestRunPausedForApprovalSaysWhichFlagsAnswer: the line that tells how to
// go on names the flags an approval takes, not TEXT (which rein answer
// refuses for an approval).
func TestRunPausedForApprovalSaysWhichFlagsAnswer(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, `rounds:
  - calls:
      - {id: w1, name: write_file, args: {path: a.txt, content: "hi\n"}}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--approval", "untrusted", "--model", "scripted:"+script, "--workspace", dir, "write it")
	if code != ExitPaused {
		t.Fatalf("exit %d, want %d (paused for approval)\n%s\n%s", code, ExitPaused, stdout, stderr)
	}
	if !strings.Contains(stderr, "--approve | --approve-thread | --deny") || strings.Contains(stderr, " TEXT\n") {
		t.Errorf("stderr %q: want the approval's flags, not TEXT", stderr)
	}
}
