package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A command on the host (full-access, or workspace-write without
// bubblewrap) could leave processes behind that its process group does
// not hold: setsid, or a double fork whose middle process exits, makes a
// daemon that outlives the call. Inside bubblewrap a PID namespace ends
// them all with the command. On the host the command runs under a reaper
// instead: this very binary, run again with reaperArg0 as its argv[0],
// which makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so that
// every orphan the command leaves is reparented to it rather than to
// init, starts the command, waits for it, and then kills every process
// left below it, however it got away from the process group. It writes
// the command's wait status to file descriptor 3 for Run.
//
// Where rein may create a PID namespace (it runs as root: the kernel asks
// for CAP_SYS_ADMIN), the reaper is also that namespace's init. The
// command could otherwise kill its reaper, its parent, as the same user,
// and orphan what it left to the host's init; an init cannot be killed
// from inside its namespace, and when it exits every process of the
// namespace dies with it.
//
// The reaper is started by re-executing /proc/self/exe, so it works in
// any program that imports this package, with no call from main: the
// package's init runs it before main when argv[0] says so.

// reaperArg0 is the argv[0] that makes a program importing this package
// act as the reaper.
const reaperArg0 = "rein-sandbox-reaper"

// reaperExe is the program Run starts as the reaper.
const reaperExe = "/proc/self/exe"

func init() {
	if len(os.Args) >= 2 && os.Args[0] == reaperArg0 {
		os.Exit(reap(os.Args[1:]))
	}
}

// reaperStatus is what the reaper writes to descriptor 3: "status N" with
// the raw wait status of the command, or "error MESSAGE" when it could not
// start it.
const (
	statusPrefix = "status "
	errorPrefix  = "error "
)

// reap runs args under this process as a child subreaper and returns the
// reaper's exit code; the command's status goes to descriptor 3.
func reap(args []string) int {
	// The command must not inherit the report: it could write a status
	// of its own, or hold the pipe open.
	syscall.CloseOnExec(3)
	report := os.NewFile(3, "status")
	say := func(s string) {
		if report != nil {
			_, _ = report.WriteString(s + "\n")
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		say(errorPrefix + "the process reaper cannot become a subreaper: " + err.Error())
		return 127
	}
	// SIGTERM (Run's timeout or cancellation, or rein's death through
	// Pdeathsig), SIGINT and SIGHUP end the command and all it started.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	path := args[0]
	if !strings.Contains(path, "/") {
		p, err := lookPath(path)
		if err != nil {
			say(errorPrefix + err.Error())
			return 127
		}
		path = p
	}
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		say(errorPrefix + fmt.Sprintf("%s: %v", args[0], err))
		return 127
	}
	// The signal goroutine only kills; the main goroutine alone reaps, so
	// the command's status is never taken by another wait.
	go func() {
		<-stop
		for {
			killChildren()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var status syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			// No child left: cannot happen before the command is reaped,
			// but a reaper that cannot wait must not hang.
			say(errorPrefix + "waiting for the command: " + err.Error())
			return 127
		}
		if got == pid {
			status = ws
			break
		}
	}
	sweep()
	say(statusPrefix + strconv.FormatUint(uint64(status), 10))
	return 0
}

// lookPath finds a program on the PATH of the environment, as a shell
// would.
func lookPath(name string) (string, error) {
	for dir := range strings.SplitSeq(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: executable file not found in $PATH", name)
}

// sweep kills every process left below the reaper and reaps it, until
// none is left. Killing a process reparents its children to the reaper,
// so they are found on the next round; a process killed cannot fork
// again, so the rounds end.
func sweep() {
	pause := time.Millisecond
	for {
		// Reaped first: with nothing left (the usual end) it returns
		// before listing any process.
		for {
			got, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return
			}
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || got <= 0 {
				break
			}
		}
		killChildren()
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// killChildren sends SIGKILL to every child of this process. As the init
// of a PID namespace (pid 1) the reaper kills every process of the
// namespace at once, which are all below it; /proc is the host's there,
// and its pids are not the namespace's.
func killChildren() {
	if os.Getpid() == 1 {
		_ = syscall.Kill(-1, syscall.SIGKILL)
		return
	}
	for _, pid := range childrenOf(os.Getpid()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// reaperNS reports, once per process, whether the reaper can be started
// in a PID namespace of its own here; it tries.
var reaperNS = sync.OnceValue(func() bool {
	cmd := exec.Command(reaperExe, "true")
	cmd.Args[0] = reaperArg0
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	return cmd.Run() == nil
})

// childrenOf returns the children of process parent, found in /proc by
// their parent pid.
func childrenOf(parent int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == parent {
			continue
		}
		if parentOf(pid) == parent {
			kids = append(kids, pid)
		}
	}
	return kids
}

// parentOf returns the parent pid of pid from /proc/PID/stat, or -1.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name, in parentheses, may hold anything: the fields
	// after it start at the last ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// reaperResult reads what the reaper wrote: the command's wait status, or
// why it could not start the command. ok is false when the reaper wrote
// nothing (it was killed).
func reaperResult(b []byte) (ws syscall.WaitStatus, startErr error, ok bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	s := string(line)
	if msg, found := strings.CutPrefix(s, errorPrefix); found {
		return 0, errors.New(msg), true
	}
	if n, found := strings.CutPrefix(s, statusPrefix); found {
		v, err := strconv.ParseUint(n, 10, 32)
		if err == nil {
			return syscall.WaitStatus(v), nil, true
		}
	}
	return 0, nil, false
}
