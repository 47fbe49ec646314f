package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetectWithoutBwrapOnPath(t *testing.T) {
	r := detect(context.Background(), func(string) (string, error) { return "", errors.New("not found") })
	if r.Isolated() || r.Isolation != IsolationNone || !strings.Contains(r.Reason, "not found on PATH") {
		t.Errorf("report %+v", r)
	}
	if !strings.HasPrefix(r.String(), "no isolation: ") {
		t.Errorf("String() = %q", r.String())
	}
}

func TestDetectBwrapThatCannotSandbox(t *testing.T) {
	// A bwrap that fails the way one without user namespaces does.
	fake := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := detect(context.Background(), func(string) (string, error) { return fake, nil })
	if r.Isolated() || r.Bwrap != fake {
		t.Fatalf("report %+v, want no isolation with the path found", r)
	}
	for _, want := range []string{"cannot create a sandbox", "No permissions to creating new namespace", "user namespaces"} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("reason %q lacks %q", r.Reason, want)
		}
	}
}

func TestDetectWorkingBwrap(t *testing.T) {
	r := Detect()
	if !r.Isolated() {
		t.Skipf("bubblewrap is not usable here: %s", r)
	}
	if r.Bwrap == "" || !strings.HasPrefix(r.String(), "bubblewrap (") {
		t.Errorf("report %+v, String %q", r, r.String())
	}
}

func TestBwrapArgsBindWorkspaceAfterTmp(t *testing.T) {
	args := bwrapArgs(Command{Workspace: "/tmp/ws", Dir: "/tmp/ws/sub", Args: []string{"sh", "-c", "x"},
		Binds: []Bind{{Path: "/cache", Writable: true}, {Path: "/ro"}}}, false, setup{})
	joined := strings.Join(args, " ")
	for _, want := range []string{"--unshare-all", "--die-with-parent", "--ro-bind /usr /usr", "--chdir /tmp/ws/sub -- sh -c x",
		"--bind /cache /cache", "--ro-bind /ro /ro"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q: %s", want, joined)
		}
	}
	if tmp, ws := strings.Index(joined, "--tmpfs /tmp"), strings.Index(joined, "--bind /tmp/ws /tmp/ws"); tmp < 0 || ws < tmp {
		t.Errorf("the workspace must be bound after the private /tmp: %s", joined)
	}
}

func TestBwrapArgsReadOnlyWorkspaceKeepsLaterBindsWritable(t *testing.T) {
	args := bwrapArgs(Command{Workspace: "/tmp/ws", Args: []string{"true"},
		Binds: []Bind{{Path: "/tmp/code", Writable: true}}}, true, setup{})
	joined := strings.Join(args, " ")
	if strings.Contains(joined, "--bind /tmp/ws ") {
		t.Errorf("the workspace is bound writable in read-only mode: %s", joined)
	}
	ro, code := strings.Index(joined, "--ro-bind /tmp/ws /tmp/ws"), strings.Index(joined, "--bind /tmp/code /tmp/code")
	if ro < 0 || code < ro {
		t.Errorf("want the workspace read-only, then the writable bind on top: %s", joined)
	}
}
