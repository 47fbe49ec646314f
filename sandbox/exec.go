package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	// Env is added to the scrubbed environment, as "NAME=value".
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
	// ends.
	Timeout time.Duration
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the exit status, or -1 when a signal ended the command.
	ExitCode int
	// TimedOut reports the command was killed at Command.Timeout.
	TimedOut bool
	// Canceled reports the command was killed because ctx ended.
	Canceled bool
	Duration time.Duration
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
}

// NewRunner returns a runner in workspace-write mode using the isolation r
// found. Use Detect for the isolation of this machine.
func NewRunner(r Report) *Runner { return &Runner{report: r, mode: ModeWorkspaceWrite} }

// NewModeRunner returns a runner in mode m on a machine where Detect found
// r. In full-access mode commands run on the host whatever r found. In
// read-only mode they need bubblewrap: without it Run refuses them rather
// than let them write the workspace.
func NewModeRunner(r Report, m Mode) *Runner {
	switch m {
	case "":
		m = ModeWorkspaceWrite
	case ModeFullAccess:
		r = Report{Isolation: IsolationNone, Bwrap: r.Bwrap,
			Reason: "the full-access sandbox mode was chosen: commands run on the host, with the network"}
	}
	return &Runner{report: r, mode: m}
}

// Report returns the isolation the runner uses.
func (r *Runner) Report() Report { return r.report }

// Mode returns the runner's sandbox mode.
func (r *Runner) Mode() Mode { return r.mode }

// Run runs c and waits for it. The command gets its own process group
// (inside bubblewrap, its own process namespace), which is killed with
// SIGKILL when the command exits, times out or ctx ends, so no child
// outlives it. A command that ran returns a nil error whatever its exit
// status; errors are for commands that could not start (ErrStart) or be
// waited for.
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
	var cmd *exec.Cmd
	if r.report.Isolated() {
		cmd = exec.Command(r.report.Bwrap, bwrapArgs(c, readOnly)...)
	} else {
		cmd = exec.Command(c.Args[0], c.Args[1:]...)
		cmd.Dir = c.Dir
		if cmd.Dir == "" {
			cmd.Dir = c.Workspace
		}
	}
	cmd.Env = append(ScrubEnv(os.Environ()), c.Env...)
	cmd.Stdin = c.Stdin
	out := c.Output
	if out == nil {
		out = io.Discard
	}
	// One writer for both: os/exec then never calls Write concurrently.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = pipeGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w: %w", ErrStart, err)
	}
	pid := cmd.Process.Pid

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
			killGroup(pid)
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

	res := Result{Duration: time.Since(start), ExitCode: cmd.ProcessState.ExitCode()}
	if killed.Load() {
		if ctx.Err() != nil {
			res.Canceled = true
		} else {
			res.TimedOut = true
		}
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("sandbox: waiting for %s: %w", c.Args[0], werr)
	}
	return res, nil
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
