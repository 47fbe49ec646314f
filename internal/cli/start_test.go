package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func TestVersionNamesTheModuleVersionAndCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}}, "v1.2.3 (commit 0123456789ab)"},
		{"modified checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "(devel) (commit abc, modified)"},
		{"no vcs", debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0"},
		{"nothing", debug.BuildInfo{}, "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(&tc.bi); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
	clearKeys(t)
	code, stdout, _ := runMain(t, context.Background(), "--version")
	if code != ExitCompleted || stdout != "rein "+version()+"\n" {
		t.Errorf("rein --version: exit %d, %q; want rein %s", code, stdout, version())
	}
}

func TestBareReinOpensTheChat(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{"chat"}},
		{[]string{"-m", "gpt-5"}, []string{"chat", "-m", "gpt-5"}},
		{[]string{"--thread", "t1"}, []string{"chat", "--thread", "t1"}},
		{[]string{"--version"}, []string{"--version"}},
		{[]string{"-h"}, []string{"-h"}},
		{[]string{"run", "x"}, []string{"run", "x"}},
	} {
		if got := defaultCommand(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("defaultCommand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	clearKeys(t)
	// Not a terminal here: the chat says so, which shows it was the chat.
	code, _, stderr := runMain(t, context.Background())
	if code != ExitUsage || !strings.Contains(stderr, "chat needs a terminal") {
		t.Errorf("rein: exit %d, stderr %q; want the chat's refusal without a terminal", code, stderr)
	}
}

func TestMistypedFlagSaysWhichWasMeant(t *testing.T) {
	clearKeys(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--modle", "x", "hi"}, "did you mean --model?"},
		{[]string{"run", "--workspce", "x", "hi"}, "did you mean --workspace?"},
		{[]string{"sessions", "list", "--jsn"}, "did you mean --json?"},
	} {
		code, _, stderr := runMain(t, context.Background(), tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, _, stderr := runMain(t, context.Background(), "run", "--zzzzzz", "hi"); strings.Contains(stderr, "did you mean") {
		t.Errorf("a flag like no other got a suggestion: %q", stderr)
	}
}

func TestShortFlagsModelAndWorkspace(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	script := writeScript(t, `rounds:
  - calls:
      - {name: read_file, args: {path: a.txt}}
  - text: done
    expect:
      - result: {tool: read_file, contains: alpha}
`)
	code, _, stderr := runMain(t, context.Background(), "run", "-m", "scripted:"+script, "-C", dir, "read a")
	if code != ExitCompleted {
		t.Fatalf("rein run -m -C: exit %d, stderr %s", code, stderr)
	}
}

// runStdin runs rein with stdin as its standard input.
func runStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := mainIO(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunReadsThePromptFromStandardInput(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, `rounds:
  - text: ok
    expect:
      - last_user: {contains: "line one\nline two"}
`)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"dash", []string{"run", "--model", "scripted:" + script, "--workspace", dir, "-"}},
		{"no prompt", []string{"run", "--model", "scripted:" + script, "--workspace", dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runStdin(t, "line one\nline two\n", tc.args...)
			if code != ExitCompleted {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			if !strings.Contains(stdout, "line one") {
				t.Errorf("the prompt read is not shown: %q", stdout)
			}
		})
	}
}

func TestRunRefusesAnEmptyOrOversizedStdinPrompt(t *testing.T) {
	clearKeys(t)
	script := writeScript(t, "rounds:\n  - text: never\n")
	for _, tc := range []struct {
		name, stdin, want string
	}{
		{"empty", "", "standard input is empty"},
		{"blank", " \n\t\n", "standard input is empty"},
		{"too large", strings.Repeat("x", maxStdinPrompt+1), "larger than 1024 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runStdin(t, tc.stdin, "run", "--model", "scripted:"+script, "-")
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

func TestPromptOfNeverReadsATerminal(t *testing.T) {
	// A terminal is an *os.File; /dev/tty exists only with a controlling
	// terminal, so the test opens a pseudo-terminal where it can.
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	if !readerIsTerminal(tty) {
		t.Skip("/dev/ptmx is not a terminal here")
	}
	for _, args := range [][]string{nil, {"-"}} {
		if _, err := promptOf(args, tty); err == nil || !strings.Contains(err.Error(), "terminal") {
			t.Errorf("promptOf(%q, terminal) = %v; want a refusal naming the terminal", args, err)
		}
	}
	if p, err := promptOf([]string{"fix", "it"}, tty); err != nil || p != "fix it" {
		t.Errorf("promptOf(args, terminal) = %q, %v; want the arguments", p, err)
	}
}
