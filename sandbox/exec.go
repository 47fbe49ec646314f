package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrStart is matched by errors.Is for every command Run could not start:
// no program, a bad workspace, or a program that does not exist.
var ErrStart = errors.New("the command could not start")

// Bind is a further host directory a command may use, at the same path as
// on the host.
type Bind struct {
	Path     string
	Writable bool
}

// Command is one program to run.
type Command struct {
	// Args are the program and its arguments; the program is looked up on
	// PATH (inside the sandbox, when there is one).
	Args []string
	// Workspace is the absolute host directory the command may write (in
	// read-only mode, only read).
	Workspace string
	// Dir is the working directory; empty means Workspace. It must be
	// inside Workspace or a Bind.
	Dir string
	// Env is added to the environment, as "NAME=value", after the
	// variables CommandEnv keeps of rein's.
	Env []string
	// Binds are further directories the command sees (such as a build
	// cache); without bubblewrap they are visible anyway.
	Binds []Bind
	// Stdin is the command's input; nil means none.
	Stdin io.Reader
	// Output receives standard output and standard error as they come.
	// Writes are never concurrent. Nil discards them.
	Output io.Writer
	// Timeout kills the command after this long; zero means only when ctx
	// ends. It is also the CPU time limit, unless Limits.CPU is set.
	Timeout time.Duration
	// Deny is the deny list of the workspace (Workspace.Deny): inside
	// bubblewrap the paths it covers are masked. Nil means
	// DefaultDenyList. Without bubblewrap nothing is masked.
	Deny *DenyList
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the exit status, or -1 when a signal ended the command.
	ExitCode int
	// TimedOut reports the command was killed at Command.Timeout.
	TimedOut bool
	// Canceled reports the command was killed because ctx ended.
	Canceled bool
	// Limit names the limit that ended the command, when its exit status
	// shows one (SIGXCPU, SIGXFSZ), such as "SIGXCPU: the CPU time limit
	// (30 s per process) was reached"; "" otherwise. Memory is never named
	// here: a failed allocation is the program's to report.
	Limit    string
	Duration time.Duration
	// Unreaped reports that, on the host, the reaper that ends what the
	// command leaves behind was killed before it could (by the command
	// itself: it runs as the same user), so processes the command started
	// may still run. Inside bubblewrap it is always false.
	Unreaped bool
}

// reaperGrace is how long Run waits, after a timeout or cancellation, for
// the reaper of a command on the host to end it and what it started
// before killing the process group itself.
const reaperGrace = 5 * time.Second

// exitCode is the exit status of ws, or -1 when a signal ended it, as
// os.ProcessState.ExitCode says.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Exited() {
		return ws.ExitStatus()
	}
	return -1
}

// pipeGrace is how long Run waits for output after the command and its
// process group are gone. Only a process that escaped the group (setsid,
// possible without bubblewrap) can hold the pipe open that long; its
// output is then cut off.
const pipeGrace = 2 * time.Second

// Runner runs commands with the isolation of a Report, in a sandbox mode.
// It is safe for concurrent use.
type Runner struct {
	report Report
	mode   Mode
	limits Limits
	// env are the names Options.Env adds to the command's environment.
	env []string
	// noPIDNS keeps the reaper out of a PID namespace, as where rein is
	// not root; tests use it to cover that path when they run as root.
	noPIDNS bool
	// cred runs bwrap as another user; tests use it to see the process
	// limit bind when they run as root.
	cred *syscall.Credential
}

// NewRunner returns a runner in workspace-write mode using the isolation r
// found, with the default limits. Use Detect for the isolation of this
// machine.
func NewRunner(r Report) *Runner { return NewRunnerOptions(r, ModeWorkspaceWrite, Options{}) }

// NewModeRunner returns a runner in mode m on a machine where Detect found
// r, with the default limits. In full-access mode commands run on the host
// whatever r found. In read-only mode they need bubblewrap: without it Run
// refuses them rather than let them write the workspace.
func NewModeRunner(r Report, m Mode) *Runner { return NewRunnerOptions(r, m, Options{}) }

// NewRunnerOptions is NewModeRunner with o.Limits instead of the default
// limits. The limits apply when r.Prlimit is set, in every mode; the
// process limit only inside bubblewrap (see Limits.Procs).
func NewRunnerOptions(r Report, m Mode, o Options) *Runner {
	switch m {
	case "":
		m = ModeWorkspaceWrite
	case ModeFullAccess:
		r = Report{Isolation: IsolationNone, Bwrap: r.Bwrap,
			Reason:  "the full-access sandbox mode was chosen: commands run on the host, with the network",
			Prlimit: r.Prlimit, LimitsReason: r.LimitsReason}
		if r.Prlimit != "" {
			r.LimitsReason = limitsHost
		}
	}
	var env []string
	for _, n := range o.Env {
		// A bad name could match no variable anyway; the config file
		// refuses it with CheckEnvName before it gets here.
		if CheckEnvName(n) == nil {
			env = append(env, n)
		}
	}
	return &Runner{report: r, mode: m, limits: o.Limits.withDefaults(), env: env}
}

// Limits returns the limits the runner's commands run under, defaults
// filled in, and whether they apply at all (Report.Prlimit is set).
// Limits.Procs applies only when ProcLimit says so.
func (r *Runner) Limits() (Limits, bool) { return r.limits, r.report.Prlimit != "" }

// ProcLimit reports whether Limits.Procs binds for the runner's commands.
func (r *Runner) ProcLimit() bool { return r.report.Isolated() && r.report.ProcLimit }

// DescribeLimits says in a sentence what the runner's commands may use,
// or that they are not limited and why.
func (r *Runner) DescribeLimits() string {
	if r.report.Prlimit == "" {
		return "Commands run without limits on memory or CPU time beyond the timeout."
	}
	return "Limits: " + r.limits.describe(r.ProcLimit()) + "."
}

// Report returns the isolation the runner uses.
func (r *Runner) Report() Report { return r.report }

// Mode returns the runner's sandbox mode.
func (r *Runner) Mode() Mode { return r.mode }

// Run runs c and waits for it. The command gets its own process group
// and, inside bubblewrap, its own process namespace, which ends with it;
// on the host it runs under a reaper (reaper.go) that every process it
// leaves is reparented to. Everything it started is killed with SIGKILL
// when it exits, times out or ctx ends, so no process outlives it, setsid
// and double forks included. A command that ran returns a nil error
// whatever its exit status; errors are for commands that could not start
// (ErrStart) or be waited for.
func (r *Runner) Run(ctx context.Context, c Command) (Result, error) {
	if len(c.Args) == 0 {
		return Result{}, fmt.Errorf("sandbox: %w: no program given", ErrStart)
	}
	if !filepath.IsAbs(c.Workspace) {
		return Result{}, fmt.Errorf("sandbox: %w: the workspace %q is not an absolute path", ErrStart, c.Workspace)
	}
	readOnly := r.mode == ModeReadOnly
	if readOnly && !r.report.Isolated() {
		// Fail closed: a plain subprocess could write the workspace.
		return Result{}, fmt.Errorf("sandbox: %w: the read-only sandbox mode needs bubblewrap to keep the workspace read-only, and there is none (%s)", ErrStart, r.report.Reason)
	}
	var prefix []string
	if r.report.Prlimit != "" {
		prefix = prlimitArgs(r.report.Prlimit, r.limits.resources(c.Timeout, r.ProcLimit()))
	}
	var cmd *exec.Cmd
	// status is where the reaper of a command on the host reports it
	// (reaper.go); report is the end the reaper writes.
	var status, report *os.File
	// info is where bwrap reports its child, infoW the end it writes.
	var info, infoW *os.File
	if r.report.Isolated() {
		s := setup{prefix: prefix}
		deny := c.Deny
		if deny == nil {
			deny = DefaultDenyList()
		}
		var err error
		if s.masks, err = deny.masks(ctx, c.Workspace, readOnly); err != nil {
			return Result{}, fmt.Errorf("sandbox: %w: %w", ErrStart, err)
		}
		if !readOnly {
			// A read-only workspace keeps its .git read-only already,
			// and nothing can be created in it.
			if s.git, err = findGit(ctx, c.Workspace, deny); err != nil {
				return Result{}, fmt.Errorf("sandbox: %w: keeping the workspace's .git read-only: %w", ErrStart, err)
			}
			defer acquirePlaceholder(&s.git, c.Workspace)()
		}
		if slices.ContainsFunc(s.masks, func(m mask) bool { return !m.writeOnly }) {
			if s.hidden, err = makeHidden(); err != nil {
				return Result{}, fmt.Errorf("sandbox: %w: masking the deny list: %w", ErrStart, err)
			}
			defer os.RemoveAll(s.hidden)
		}
		if info, infoW, err = os.Pipe(); err != nil {
			return Result{}, fmt.Errorf("sandbox: %w: %w", ErrStart, err)
		}
		defer infoW.Close()
		// bwrap reports on descriptor 3 its child, the init of the
		// command's PID namespace (pidns.go).
		cmd = exec.Command(r.report.Bwrap, append([]string{"--info-fd", "3"}, bwrapArgs(c, readOnly, s)...)...)
		cmd.ExtraFiles = []*os.File{infoW}
	} else {
		dir := c.Dir
		if dir == "" {
			dir = c.Workspace
		}
		// The reaper would start the program itself; a missing one is
		// still refused here, as exec.Cmd does.
		if err := findProgram(c.Args[0], dir); err != nil {
			return Result{}, fmt.Errorf("sandbox: %w: %w", ErrStart, err)
		}
		var err error
		if status, report, err = os.Pipe(); err != nil {
			return Result{}, fmt.Errorf("sandbox: %w: starting the process reaper: %w", ErrStart, err)
		}
		defer status.Close()
		defer report.Close()
		cmd = exec.Command(reaperExe)
		cmd.Args = append(append([]string{reaperArg0}, prefix...), c.Args...)
		cmd.ExtraFiles = []*os.File{report}
		cmd.Dir = dir
	}
	cmd.Env = append(CommandEnv(os.Environ(), r.env), c.Env...)
	cmd.Stdin = c.Stdin
	out := c.Output
	if out == nil {
		out = io.Discard
	}
	// One writer for both: os/exec then never calls Write concurrently.
	cmd.Stdout, cmd.Stderr = out, out
	// If rein dies, bwrap is killed, and its namespace with it; the
	// reaper is asked to end what it holds, which a SIGKILL would let go.
	death := syscall.SIGKILL
	if status != nil {
		death = syscall.SIGTERM
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: death, Credential: r.cred}
	if status != nil && !r.noPIDNS && reaperNS() {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
	}
	cmd.WaitDelay = pipeGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		if info != nil {
			info.Close()
		}
		return Result{}, fmt.Errorf("sandbox: %w: %w", ErrStart, err)
	}
	pid := cmd.Process.Pid
	var nsinit *nsInit
	if info != nil {
		infoW.Close()
		nsinit = watchInit(info)
	}
	if report != nil {
		// Only the reaper holds the end it writes, so the read below
		// ends when the reaper does.
		report.Close()
	}

	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	// The watcher kills the group when runCtx ends; it exits when the
	// command has, and Run waits for it before returning.
	var killed atomic.Bool
	exited := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-runCtx.Done():
			killed.Store(true)
			stop(pid, status != nil, nsinit, exited)
		case <-exited:
		}
	}()

	var werr error
	if err := waitExited(pid); err != nil {
		// Without a non-reaping wait the group cannot be swept safely
		// after the leader exits (its id could be reused), so only the
		// kill on cancellation remains.
		werr = cmd.Wait()
		close(exited)
		<-watched
	} else {
		close(exited)
		<-watched
		// The leader is a zombie until Wait, so its group id still names
		// only its own group: sweep children left in the background.
		killGroup(pid)
		werr = cmd.Wait()
	}

	if nsinit != nil {
		nsinit.wait(pipeGrace)
	}
	res := Result{Duration: time.Since(start), ExitCode: cmd.ProcessState.ExitCode()}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if status != nil {
		_ = status.SetReadDeadline(time.Now().Add(pipeGrace))
		b, _ := io.ReadAll(io.LimitReader(status, 4096))
		got, startErr, ok := reaperResult(b)
		switch {
		case startErr != nil:
			return Result{}, fmt.Errorf("sandbox: %w: %w", ErrStart, startErr)
		case ok:
			ws = got
			res.ExitCode = exitCode(ws)
		default:
			// Killed before it could report: what the command left
			// may have been orphaned to init.
			res.Unreaped = true
		}
	}
	if killed.Load() {
		if ctx.Err() != nil {
			res.Canceled = true
		} else {
			res.TimedOut = true
		}
	} else if prefix != nil {
		res.Limit = limitHit(ws, r.limits, c.Timeout)
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("sandbox: waiting for %s: %w", c.Args[0], werr)
	}
	return res, nil
}

// stop ends a command that timed out or was cancelled, and everything it
// started, and returns once the command has exited (or been killed).
// exited is closed when it has.
func stop(pid int, reaped bool, nsinit *nsInit, exited <-chan struct{}) {
	if reaped {
		// The reaper kills everything below it, escaped from the group
		// or not, and exits; a SIGKILL to the group would kill the
		// reaper first and orphan the escaped.
		_ = syscall.Kill(pid, syscall.SIGTERM)
	} else if !nsinit.kill() {
		killGroup(pid)
		return
	}
	// bwrap's child is the namespace's init: killed, it takes every
	// process of the namespace with it before bwrap sees it exit, so once
	// Run returns none is left. Killing bwrap first would let Run return
	// while the kernel is still ending them.
	select {
	case <-exited:
	case <-time.After(reaperGrace):
		killGroup(pid)
	}
}

// findProgram returns an error when program cannot be run: looked up on
// PATH, or relative to dir when it names a path.
func findProgram(program, dir string) error {
	if !strings.Contains(program, "/") {
		_, err := exec.LookPath(program)
		return err
	}
	if !filepath.IsAbs(program) {
		program = filepath.Join(dir, program)
	}
	fi, err := os.Stat(program)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", program)
	}
	return nil
}

// waitExited blocks until the process pid has exited, without reaping it.
func waitExited(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// killGroup sends SIGKILL to the process group pgid. A group already gone
// is not an error.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
