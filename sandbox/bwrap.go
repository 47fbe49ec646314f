package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Isolation says how commands run by a Runner are kept from the host.
type Isolation string

// Isolation levels.
const (
	// IsolationNone runs commands as plain subprocesses: the environment is
	// scrubbed and the process group is killed at the end, but the command
	// sees the network and can write wherever the user can.
	IsolationNone Isolation = "none"
	// IsolationBwrap runs commands inside bubblewrap: no network, the
	// system read-only, the workspace read-write, a private /tmp, and a
	// private process namespace whose processes all die with the command.
	IsolationBwrap Isolation = "bubblewrap"
)

// Report says which isolation is active and why.
type Report struct {
	Isolation Isolation
	// Bwrap is the path of the bwrap program when it was found on PATH,
	// whether or not it works.
	Bwrap string
	// Reason explains the choice in a sentence a user can act on.
	Reason string
}

// Isolated reports whether commands run inside a sandbox.
func (r Report) Isolated() bool { return r.Isolation == IsolationBwrap }

// String describes the report on one line, as `rein doctor` prints it.
func (r Report) String() string {
	if r.Isolated() {
		return fmt.Sprintf("bubblewrap (%s): %s", r.Bwrap, r.Reason)
	}
	return "no isolation: " + r.Reason
}

// probeTimeout bounds the trial run of bwrap. A working bwrap starts in
// milliseconds; one that hangs is as useless as one that fails.
const probeTimeout = 10 * time.Second

// Detect finds out once per process whether bubblewrap can isolate
// commands here: bwrap must be on PATH and a trial run with the options
// Runner uses must succeed, since user namespaces may be disabled (in
// containers, or by sysctl) even where bwrap is installed.
func Detect() Report { return detectOnce() }

var detectOnce = sync.OnceValue(func() Report {
	return detect(context.Background(), exec.LookPath)
})

func detect(ctx context.Context, lookPath func(string) (string, error)) Report {
	path, err := lookPath("bwrap")
	if err != nil {
		return Report{Isolation: IsolationNone,
			Reason: "bwrap was not found on PATH; install bubblewrap (apt-get install bubblewrap) for commands without network and with a read-only system"}
	}
	if err := probe(ctx, path); err != nil {
		return Report{Isolation: IsolationNone, Bwrap: path,
			Reason: "bwrap is installed but cannot create a sandbox here (" + err.Error() + "); " +
				"user namespaces may be disabled: check kernel.unprivileged_userns_clone, user.max_user_namespaces, " +
				"or AppArmor's restrict_unprivileged_userns, or run outside a restricted container"}
	}
	return Report{Isolation: IsolationBwrap, Bwrap: path,
		Reason: "commands run without network, with the system read-only, the workspace read-write and a private /tmp"}
}

// probe runs `true` inside bwrap with the options of a real command.
func probe(ctx context.Context, bwrap string) error {
	ws, err := os.MkdirTemp("", "rein-probe-")
	if err != nil {
		return fmt.Errorf("making the probe workspace: %w", err)
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	args := bwrapArgs(Command{Workspace: ws, Args: []string{"true"}}, false)
	cmd := exec.CommandContext(ctx, bwrap, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if msg := firstLine(stderr.String()); msg != "" {
			return fmt.Errorf("%s: %w", msg, err)
		}
		return err
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// systemDirs are bound read-only, when present, so programs and their
// libraries and configuration are found. Home directories, /root, /var,
// /run and /mnt are not: they hold the user's files and sockets.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// bwrapArgs returns bwrap's arguments for c: every namespace unshared (so
// no network), the system read-only, a private /tmp and /dev and /proc,
// then the workspace (read-only when readOnly) and further binds, in that
// order, so a workspace under /tmp is bound on top of the private /tmp and
// a writable bind inside a read-only workspace stays writable.
func bwrapArgs(c Command, readOnly bool) []string {
	args := []string{
		"--unshare-all",
		"--die-with-parent",
		// A new session keeps the command from pushing input into the
		// terminal rein runs in (TIOCSTI).
		"--new-session",
		"--hostname", "sandbox",
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			// Merged /usr: /bin -> usr/bin. Recreate the link rather than
			// binding the target twice.
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--tmpfs", "/tmp",
		// The host's home is not there; programs that write to ~ get the
		// private /tmp.
		"--setenv", "HOME", "/tmp",
	)
	if readOnly {
		args = append(args, "--ro-bind", c.Workspace, c.Workspace)
	} else {
		args = append(args, "--bind", c.Workspace, c.Workspace)
	}
	for _, b := range c.Binds {
		if b.Writable {
			args = append(args, "--bind", b.Path, b.Path)
		} else {
			args = append(args, "--ro-bind", b.Path, b.Path)
		}
	}
	dir := c.Dir
	if dir == "" {
		dir = c.Workspace
	}
	args = append(args, "--chdir", filepath.Clean(dir), "--")
	return append(args, c.Args...)
}
