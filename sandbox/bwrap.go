package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Isolation says how commands run by a Runner are kept from the host.
type Isolation string

// Isolation levels.
const (
	// IsolationNone runs commands as plain subprocesses: the environment is
	// an allow-list and every process the command started is killed at the
	// end, but the command sees the network and can write wherever the
	// user can.
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
	// Prlimit is the path of util-linux's prlimit, which sets Limits on
	// every command, or "" when commands run without limits.
	Prlimit string
	// ProcLimit reports whether Limits.Procs binds: only inside
	// bubblewrap's user namespace, and not when rein runs as root.
	ProcLimit bool
	// LimitsReason says which limits apply here, or why none or not all
	// do, in a sentence a user can act on.
	LimitsReason string
}

// Isolated reports whether commands run inside a sandbox.
func (r Report) Isolated() bool { return r.Isolation == IsolationBwrap }

// String describes the report on one line, as `rein doctor` prints it.
func (r Report) String() string {
	s := "no isolation: " + r.Reason
	if r.Isolated() {
		s = fmt.Sprintf("bubblewrap (%s): %s", r.Bwrap, r.Reason)
	}
	if r.LimitsReason != "" {
		s += "; limits: " + r.LimitsReason
	}
	return s
}

// probeTimeout bounds the trial run of bwrap. A working bwrap starts in
// milliseconds; one that hangs is as useless as one that fails.
const probeTimeout = 10 * time.Second

// Detect finds out once per process whether bubblewrap can isolate
// commands here: bwrap must be on PATH and a trial run with the options
// Runner uses must succeed, since user namespaces may be disabled (in
// containers, or by sysctl) even where bwrap is installed. It also finds
// prlimit and tries it in the same trial run: whether it can set limits,
// and whether the process limit binds.
func Detect() Report { return detectOnce() }

var detectOnce = sync.OnceValue(func() Report {
	return detect(context.Background(), exec.LookPath)
})

// Reasons about limits, as given in Report.LimitsReason.
const (
	limitsAll    = "memory, CPU time, processes, file size and open files are limited"
	limitsNoProc = "memory, CPU time, file size and open files are limited, "
	limitsHost   = limitsNoProc + "but not processes: on the host the kernel would count every process of the user against the limit"
	limitsRoot   = limitsNoProc + "but not processes: rein runs as root, whom the kernel exempts from the process limit, so a fork bomb is ended only by the timeout; run rein as another user to limit processes"
	limitsNoNS   = limitsNoProc + "but not processes: bwrap made no user namespace here (it may be setuid), so the kernel would count every process of the user against the limit"
)

func detect(ctx context.Context, lookPath func(string) (string, error)) Report {
	prlimit, perr := lookPath("prlimit")
	path, err := lookPath("bwrap")
	if err != nil {
		r := Report{Isolation: IsolationNone,
			Reason: "bwrap was not found on PATH; install bubblewrap (apt-get install bubblewrap) for commands without network and with a read-only system"}
		r.hostLimits(ctx, prlimit, perr)
		return r
	}
	inside := prlimit
	if perr != nil || !underSystemDir(prlimit) {
		inside = ""
	}
	res, err := probe(ctx, path, inside)
	if err != nil {
		r := Report{Isolation: IsolationNone, Bwrap: path,
			Reason: "bwrap is installed but cannot create a sandbox here (" + err.Error() + "); " +
				"user namespaces may be disabled: check kernel.unprivileged_userns_clone, user.max_user_namespaces, " +
				"or AppArmor's restrict_unprivileged_userns, or run outside a restricted container"}
		r.hostLimits(ctx, prlimit, perr)
		return r
	}
	r := Report{Isolation: IsolationBwrap, Bwrap: path,
		Reason: "commands run without network, with the system read-only, the workspace read-write and a private /tmp"}
	switch {
	case perr != nil:
		r.LimitsReason = noPrlimit
	case inside == "":
		r.LimitsReason = "none: prlimit is at " + prlimit + ", which the sandbox does not show (only " + strings.Join(systemDirs, ", ") + "); install util-linux's prlimit there"
	case res.limitErr != "":
		r.LimitsReason = "none: prlimit cannot set them inside the sandbox (" + res.limitErr + ")"
	default:
		r.Prlimit = prlimit
		switch {
		case !res.userNS:
			r.LimitsReason = limitsNoNS
		case res.unbounded:
			r.LimitsReason = limitsRoot
		default:
			r.ProcLimit = true
			r.LimitsReason = limitsAll
		}
	}
	return r
}

const noPrlimit = "none: prlimit was not found on PATH; install util-linux (apt-get install util-linux) to limit the memory, CPU time, processes and file size of commands"

// hostLimits fills in the limits of commands run on the host: prlimit must
// be found and work.
func (r *Report) hostLimits(ctx context.Context, prlimit string, lookErr error) {
	if lookErr != nil {
		r.LimitsReason = noPrlimit
		return
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prlimit, "--core=0:0", "--", prlimit, "--version")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.LimitsReason = "none: prlimit does not work here (" + firstLine(string(out)) + ": " + err.Error() + ")"
		return
	}
	r.Prlimit = prlimit
	r.LimitsReason = limitsHost
}

// underSystemDir reports whether p is in one of the directories the
// sandbox shows.
func underSystemDir(p string) bool {
	for _, d := range systemDirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// probeResult is what the trial run found.
type probeResult struct {
	// userNS: the sandbox has a user namespace of its own.
	userNS bool
	// unbounded: a fork succeeded under a process limit of 1.
	unbounded bool
	// limitErr is why prlimit failed, or "".
	limitErr string
}

// probeScript prints the sandbox's user namespace, then runs prlimit ($1)
// with a process limit of 1 and tries a fork under it. The namespace is
// read before the limit, since reading it may fork.
const probeScript = `readlink /proc/self/ns/user
[ -n "$1" ] || exit 0
exec "$1" --nproc=1:1 --core=0:0 -- sh -c 'echo started; "$0" --version >/dev/null && echo unbounded' "$1"`

// probe runs probeScript inside bwrap with the options of a real command;
// prlimit is "" when there is none to try. An error means bwrap itself
// failed.
func probe(ctx context.Context, bwrap, prlimit string) (probeResult, error) {
	ws, err := os.MkdirTemp("", "rein-probe-")
	if err != nil {
		return probeResult{}, fmt.Errorf("making the probe workspace: %w", err)
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	args := bwrapArgs(Command{Workspace: ws, Args: []string{"sh", "-c", probeScript, "sh", prlimit}}, false, setup{})
	cmd := exec.CommandContext(ctx, bwrap, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	lines := strings.Split(stdout.String(), "\n")
	ns := strings.TrimSpace(lines[0])
	if ns == "" && runErr != nil {
		if msg := firstLine(stderr.String()); msg != "" {
			return probeResult{}, fmt.Errorf("%s: %w", msg, runErr)
		}
		return probeResult{}, runErr
	}
	host, _ := os.Readlink("/proc/self/ns/user")
	res := probeResult{userNS: ns != "" && host != "" && ns != host}
	if prlimit != "" {
		res.unbounded = slices.Contains(lines, "unbounded")
		if !slices.Contains(lines, "started") {
			res.limitErr = firstLine(stderr.String())
			if res.limitErr == "" && runErr != nil {
				res.limitErr = runErr.Error()
			}
		}
	}
	return res, nil
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

// setup is what a command's bwrap arguments add to its Command.
type setup struct {
	// masks are the workspace paths the deny list covers.
	masks []mask
	// hidden is a host directory holding an empty file and an empty
	// directory, "file" and "dir", that cannot be opened (mode 0); they
	// are bound over the masks that deny reading.
	hidden string
	// prefix runs the command: prlimit and its options.
	prefix []string
	// git keeps the workspace's repositories read-only.
	git gitSetup
}

// bwrapArgs returns bwrap's arguments for c: every namespace unshared (so
// no network) and every capability dropped, the system read-only, a
// private /tmp and /dev and /proc, then the workspace (read-only when
// readOnly) and further binds, then the masks of the deny list, then the
// workspace's .git read-only, in that order, so a workspace under /tmp is
// bound on top of the private /tmp, a writable bind inside a read-only
// workspace stays writable, and a mask covers whatever is below it.
func bwrapArgs(c Command, readOnly bool, s setup) []string {
	args := []string{
		"--unshare-all",
		"--die-with-parent",
		// A new session keeps the command from pushing input into the
		// terminal rein runs in (TIOCSTI).
		"--new-session",
		// bwrap run by root keeps root's capabilities otherwise, which
		// would let the command read the masked files and undo mounts.
		"--cap-drop", "ALL",
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
		// The host's TMPDIR is not there either.
		"--setenv", "TMPDIR", "/tmp",
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
	args = append(args, maskArgs(c.Workspace, s)...)
	args = append(args, gitArgs(s.git)...)
	dir := c.Dir
	if dir == "" {
		dir = c.Workspace
	}
	args = append(args, "--chdir", filepath.Clean(dir), "--")
	args = append(args, s.prefix...)
	return append(args, c.Args...)
}

// maskArgs returns the binds that apply the masks in workspace ws. A path
// denied for reading gets an empty file or directory that cannot be opened
// (and, being a mount point, cannot be removed or renamed). A path denied
// for writing is bound read-only over itself, and the directories between
// it and the workspace root are bound over themselves first: mount points
// cannot be renamed, so a command cannot move .git aside and put a copy
// with its own hooks in its place.
func maskArgs(ws string, s setup) []string {
	var args []string
	parents := map[string]bool{}
	var order []string
	for _, m := range s.masks {
		if !m.writeOnly {
			continue
		}
		for d := filepath.Dir(m.path); d != ws && strings.HasPrefix(d, ws+string(filepath.Separator)); d = filepath.Dir(d) {
			if !parents[d] {
				parents[d] = true
				order = append(order, d)
			}
		}
	}
	slices.Sort(order)
	for _, d := range order {
		args = append(args, "--bind", d, d)
	}
	for _, m := range s.masks {
		switch {
		case m.writeOnly:
			args = append(args, "--ro-bind", m.path, m.path)
		case m.dir:
			args = append(args, "--ro-bind", filepath.Join(s.hidden, "dir"), m.path)
		default:
			args = append(args, "--ro-bind", filepath.Join(s.hidden, "file"), m.path)
		}
	}
	return args
}

// makeHidden creates the directory setup.hidden names. Others may pass
// through it (a test runs bwrap as another user) but not list it.
func makeHidden() (string, error) {
	dir, err := os.MkdirTemp("", "rein-deny-")
	if err != nil {
		return "", err
	}
	err = errors.Join(
		os.Chmod(dir, 0o711),
		os.WriteFile(filepath.Join(dir, "file"), nil, 0),
		os.Chmod(filepath.Join(dir, "file"), 0),
		os.Mkdir(filepath.Join(dir, "dir"), 0),
		os.Chmod(filepath.Join(dir, "dir"), 0),
	)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
