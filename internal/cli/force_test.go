package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/session"
)

// TestForceToolReachesEveryDoor: --force-tool mounts a tool the
// capability leaves out in run's composition (rein tools shows it
// "forced"), and a thread started with forceTools gets it in serve (exec,
// which the approval policy lets run here).
func TestForceToolReachesEveryDoor(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	code, stdout, stderr := runMain(t, context.Background(), "tools", "--workspace", dir, "--capability", "none", "--force-tool", "read_file")
	if code != ExitCompleted {
		t.Fatalf("tools: exit %d, stderr %s", code, stderr)
	}
	in, _, _ := strings.Cut(stdout, "out:")
	if !strings.Contains(in, "read_file") || !strings.Contains(in, "forced") || strings.Contains(in, "write_file") {
		t.Errorf("rein tools --capability none --force-tool read_file does not list read_file alone in, forced:\n%s", stdout)
	}

	script := writeScript(t, "rounds:\n  - text: hi\n")
	st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &serveBackend{f: &serveFlags{model: "scripted:" + script, approval: "on-request"}, dir: dir, logw: io.Discard, st: st}
	defer b.close()
	for _, tc := range []struct {
		id     string
		forced []string
		want   bool
	}{
		{"thread_plain", nil, false},
		{"thread_forced", []string{"exec"}, true},
	} {
		o, release, err := b.setup(t.Context(), session.Thread{ID: tc.id, Settings: session.ThreadConfig{ForceTools: tc.forced}})
		if err != nil {
			t.Fatal(err)
		}
		if release != nil {
			release()
		}
		if _, ok := o.Tools.Get("exec"); ok != tc.want {
			t.Errorf("%s: exec mounted %v, want %v", tc.id, ok, tc.want)
		}
	}
}
