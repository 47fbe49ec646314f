package cli

import (
	"context"
	"strings"
	"testing"
)

func TestToolsAndDoctorSayWhichExecCaseApplies(t *testing.T) {
	clearKeys(t)
	for _, tc := range []struct {
		name  string
		bwrap bool
		args  []string
		tools string
	}{
		{"bubblewrap", true, nil, "exec:        offered; workspace-write: commands run inside bubblewrap, without asking"},
		{"no sandbox asks each call", false, nil, "exec:        offered; no sandbox (bwrap was not found on PATH (test)): each command waits for your approval"},
		{"no sandbox, approval never", false, []string{"--approval", "never"}, "exec:        not offered: no sandbox"},
		{"no sandbox, read-only", false, []string{"--sandbox", "read-only"}, "exec:        not offered: no sandbox (bwrap was not found on PATH (test)), and the read-only sandbox mode runs commands only inside bubblewrap"},
		{"full access", false, []string{"--sandbox", "full-access"}, "exec:        offered; full-access: commands run on the host without asking"},
		{"turned off", true, []string{"--no-tool", "exec"}, "exec:        not offered: --no-tool exec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeSandbox(t, tc.bwrap)
			args := append([]string{"tools", "--workspace", t.TempDir()}, tc.args...)
			code, stdout, stderr := runMain(t, context.Background(), args...)
			if code != 0 || !strings.Contains(stdout, tc.tools) {
				t.Errorf("rein tools %v: exit %d, want a line %q\n%s%s", tc.args, code, tc.tools, stdout, stderr)
			}
		})
	}
	fakeSandbox(t, false)
	_, stdout, _ := runMain(t, context.Background(), "doctor")
	if l := doctorLine(stdout, "exec"); !strings.Contains(l, "offered by default; no sandbox") || !strings.Contains(l, "waits for your approval") {
		t.Errorf("doctor's exec line %q", l)
	}
	_, stdout, _ = runMain(t, context.Background(), "doctor", "--sandbox", "read-only")
	if l := doctorLine(stdout, "exec"); !strings.Contains(l, "not offered") {
		t.Errorf("doctor --sandbox read-only: exec line %q", l)
	}
}

func TestDemoNeverTouchesTheUsersStoreOrPaidModel(t *testing.T) {
	clearKeys(t)
	// A key and a configured model: the demo uses neither unless asked.
	t.Setenv("OPENAI_API_KEY", "sk-test-not-used")
	writeConfig(t, `model = "openai:gpt-5"`+"\n")
	code, stdout, stderr := runMain(t, context.Background(), "demo")
	if code != ExitCompleted || !strings.Contains(stdout, "the model is scripted") || !strings.Contains(stdout, "store: a temporary one, not yours") {
		t.Fatalf("demo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The user's store was never opened, let alone written.
	_, out, _ := runMain(t, context.Background(), "sessions", "list", "--all")
	if !strings.Contains(out, "no threads yet") {
		t.Errorf("the user's store holds the demo's thread:\n%s", out)
	}
}
