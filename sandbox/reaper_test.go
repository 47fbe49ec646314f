package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanRunners are the runners of every mode that runs here: the plain
// one (workspace-write without bubblewrap), full-access, and bubblewrap's
// when it works.
func orphanRunners(t *testing.T) map[string]*Runner {
	t.Helper()
	rs := runners(t)
	rs["full-access"] = NewModeRunner(Detect(), ModeFullAccess)
	noNS := NewModeRunner(Detect(), ModeFullAccess)
	noNS.noPIDNS = true
	rs["full-access-without-pidns"] = noNS
	return rs
}

// TestRunEndsProcessesThatLeftTheGroup: no process a command starts
// outlives it, in any mode, also one that left the process group with
// setsid or was orphaned by a double fork, whether the command exits,
// times out or is cancelled (DESIGN §7.3).
func TestRunEndsProcessesThatLeftTheGroup(t *testing.T) {
	for name, r := range orphanRunners(t) {
		for _, end := range []string{"exit", "timeout", "cancel"} {
			t.Run(name+"/"+end, func(t *testing.T) {
				a, b, c := sleepMarker(), sleepMarker(), sleepMarker()
				script := fmt.Sprintf(`setsid sleep %s </dev/null >/dev/null 2>&1 &
sh -c '(setsid sh -c "sleep %s" </dev/null >/dev/null 2>&1 &) &'
sh -c 'sleep %s </dev/null >/dev/null 2>&1 &'
echo started`, a, b, c)
				if end != "exit" {
					script += "; sleep 60"
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cmd := Command{Args: []string{"sh", "-c", script}, Workspace: t.TempDir()}
				var out bytes.Buffer
				cmd.Output = &out
				switch end {
				case "timeout":
					cmd.Timeout = time.Second
				case "cancel":
					time.AfterFunc(time.Second, cancel)
				}
				res, err := r.Run(ctx, cmd)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), "started") {
					t.Fatalf("the command did not run: %+v %q", res, out.String())
				}
				if res.Unreaped {
					t.Errorf("result %+v: the reaper was lost", res)
				}
				if end == "timeout" && !res.TimedOut || end == "cancel" && !res.Canceled {
					t.Errorf("result %+v, want it %s", res, end)
				}
				for _, m := range []string{a, b, c} {
					if pids := survivors(t, m); len(pids) > 0 {
						t.Errorf("processes survived the call: sleep %s as %v", m, pids)
					}
				}
			})
		}
	}
}

// TestReaperKeepsExitStatusAndStartErrors: on the host the command runs
// under the reaper, which reports its exit code and the signal that ended
// it as if it had run alone, and a program it cannot start as ErrStart.
func TestReaperKeepsExitStatusAndStartErrors(t *testing.T) {
	r := NewModeRunner(Report{Isolation: IsolationNone}, ModeFullAccess)
	for _, tc := range []struct {
		script string
		code   int
	}{
		{"exit 7", 7},
		{"kill -TERM $$", -1},
		{"true", 0},
	} {
		res, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", tc.script}, Workspace: t.TempDir()})
		if err != nil || res.ExitCode != tc.code {
			t.Errorf("%q: %+v %v, want exit code %d", tc.script, res, err, tc.code)
		}
	}
	if _, err := r.Run(context.Background(), Command{Args: []string{"./no-such-program"}, Workspace: t.TempDir()}); err == nil {
		t.Error("a missing program started")
	}
}

func TestReaperResult(t *testing.T) {
	if ws, err, ok := reaperResult([]byte("status 1792\n")); !ok || err != nil || exitCode(ws) != 7 {
		t.Errorf("status: %v %v %v", ws, err, ok)
	}
	if _, err, ok := reaperResult([]byte("error sh: not found\n")); !ok || err == nil || err.Error() != "sh: not found" {
		t.Errorf("error: %v %v", err, ok)
	}
	for _, b := range []string{"", "status x", "statu 1", "status 99999999999"} {
		if _, err, ok := reaperResult([]byte(b)); ok || err != nil {
			t.Errorf("%q: %v %v", b, err, ok)
		}
	}
}

// TestReaperSurvivesTheCommand: a command on the host cannot orphan what
// it started by killing its reaper, where the reaper is the init of a
// PID namespace; elsewhere the result says processes may be left.
func TestReaperSurvivesTheCommand(t *testing.T) {
	for _, ns := range []bool{true, false} {
		t.Run(fmt.Sprintf("pidns=%v", ns), func(t *testing.T) {
			r := NewModeRunner(Report{Isolation: IsolationNone}, ModeFullAccess)
			r.noPIDNS = !ns
			marker := sleepMarker()
			script := fmt.Sprintf(`setsid sleep %s </dev/null >/dev/null 2>&1 & kill -9 $PPID; kill -9 1; echo done`, marker)
			var out bytes.Buffer
			res, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", script}, Workspace: t.TempDir(), Output: &out})
			if err != nil {
				t.Fatal(err)
			}
			pids := survivors(t, marker)
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if !ns || !reaperNS() {
				// The command can kill its reaper: the result must say
				// what may be left.
				if len(pids) > 0 && !res.Unreaped {
					t.Errorf("processes survived (%v) and the result %+v does not say so", pids, res)
				}
				if ns {
					t.Skip("no PID namespace for the reaper here (rein is not root)")
				}
				return
			}
			if res.Unreaped || len(pids) > 0 || !strings.Contains(out.String(), "done") {
				t.Errorf("result %+v, output %q, survivors %v", res, out.String(), pids)
			}
		})
	}
}
