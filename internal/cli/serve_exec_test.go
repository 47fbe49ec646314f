package cli

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tools/exec"
)

// TestServeThreadsGetExecByTheRunRule: a serve thread started without
// naming tools is offered exec on the same rule as run and chat (the
// runtime's): inside bubblewrap, or without it under a policy that asks for
// each call, or in full-access; never unconfined without approval, and a
// thread's disable_tools removes it. Before, serve threads got exec only
// when they forced it.
func TestServeThreadsGetExecByTheRunRule(t *testing.T) {
	clearKeys(t)
	script := writeScript(t, "rounds:\n  - text: hi\n")
	for _, tc := range []struct {
		name     string
		bwrap    bool
		approval string // the server's --approval
		sandbox  string // the server's --sandbox ("": workspace-write)
		settings session.ThreadConfig
		want     bool
	}{
		{"bubblewrap", true, "never", "", session.ThreadConfig{}, true},
		{"no sandbox, each call approved", false, "on-request", "", session.ThreadConfig{}, true},
		{"no sandbox, no approval", false, "never", "", session.ThreadConfig{}, false},
		{"no sandbox, the thread asks for no approval", false, "on-request", "", session.ThreadConfig{Approval: "never"}, false},
		{"no sandbox, full-access", false, "never", "full-access", session.ThreadConfig{}, true},
		{"no sandbox, read-only", false, "on-request", "", session.ThreadConfig{Sandbox: "read-only"}, false},
		{"disabled by the thread", true, "never", "", session.ThreadConfig{DisableTools: []string{"exec"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeSandbox(t, tc.bwrap)
			dir := t.TempDir()
			st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			mode := tc.sandbox
			if mode == "" {
				mode = "workspace-write"
			}
			b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: tc.approval, sandbox: mode}, dir: dir, logw: io.Discard, st: st}
			defer b.close()
			o, _, err := b.setup(t.Context(), session.Thread{ID: "thread_x", Settings: tc.settings})
			if err != nil {
				t.Fatal(err)
			}
			if _, got := o.Tools.Get(exec.ExecName); got != tc.want {
				t.Errorf("exec offered = %v, want %v (tools %v)", got, tc.want, o.Tools.Names())
			}
		})
	}
}
