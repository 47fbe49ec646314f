package sandbox

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Inside bubblewrap the command runs in a PID namespace whose init is
// bwrap's child. When that init dies, the kernel kills every process of
// the namespace and waits for them before the init's own exit completes,
// so nothing the command started, setsid or not, outlives it. But bwrap
// itself exits as soon as the command does, and its child dies only then,
// of --die-with-parent: the namespace ends a moment after bwrap, not
// before. nsInit lets Run wait for it (and kill it on a timeout), so that
// when Run returns no process of the command is left.

// nsInit is bwrap's child, the init of the command's PID namespace, as
// bwrap reports it on --info-fd.
type nsInit struct {
	// ready is closed once pid and pidfd are set, or bwrap's report
	// ended without them.
	ready chan struct{}
	pid   int
	// pidfd refers to the init without the risk of a reused pid; -1 when
	// the kernel has no pidfd_open (before Linux 5.3).
	pidfd int
}

// maxInfo bounds what is read of bwrap's --info-fd report.
const maxInfo = 64 << 10

// watchInit reads bwrap's report from r in a goroutine of its own, which
// ends when the report is read or r reaches its end (bwrap exited), and
// closes r.
func watchInit(r *os.File) *nsInit {
	n := &nsInit{ready: make(chan struct{}), pidfd: -1}
	go func() {
		defer close(n.ready)
		defer r.Close()
		var info struct {
			ChildPid int `json:"child-pid"`
		}
		if err := json.NewDecoder(io.LimitReader(r, maxInfo)).Decode(&info); err != nil || info.ChildPid <= 0 {
			return
		}
		n.pid = info.ChildPid
		if fd, err := unix.PidfdOpen(n.pid, 0); err == nil {
			n.pidfd = fd
		}
	}()
	return n
}

// kill sends SIGKILL to the namespace's init, which ends the namespace.
// It reports whether the init was known; a nil n knows none.
func (n *nsInit) kill() bool {
	if n == nil {
		return false
	}
	select {
	case <-n.ready:
	default:
		// bwrap has not reported it yet; the caller kills bwrap.
		return false
	}
	switch {
	case n.pid <= 0:
		return false
	case n.pidfd >= 0:
		return unix.PidfdSendSignal(n.pidfd, unix.SIGKILL, nil, 0) == nil
	}
	return syscall.Kill(n.pid, syscall.SIGKILL) == nil
}

// wait waits, after bwrap has exited, until the namespace's init is gone,
// and with it every process of the namespace, killing it if it is not
// gone within timeout (--die-with-parent should have killed it already),
// and closes the pidfd.
func (n *nsInit) wait(timeout time.Duration) {
	select {
	case <-n.ready:
	case <-time.After(timeout):
		// bwrap exited and its report still did not end: there is
		// nothing to wait for.
		return
	}
	if n.pid <= 0 {
		return
	}
	if n.pidfd < 0 {
		n.poll(timeout)
		return
	}
	defer unix.Close(n.pidfd)
	if !n.exited(timeout) {
		_ = unix.PidfdSendSignal(n.pidfd, unix.SIGKILL, nil, 0)
		n.exited(timeout)
	}
}

// exited waits up to timeout for the pidfd to say the init exited.
func (n *nsInit) exited(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(n.pidfd), Events: unix.POLLIN}}
		k, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && k > 0
	}
}

// poll is wait without a pidfd: it checks the pid until it is gone.
func (n *nsInit) poll(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	killed := false
	for syscall.Kill(n.pid, 0) == nil {
		if time.Now().After(deadline) {
			if killed {
				return
			}
			_ = syscall.Kill(n.pid, syscall.SIGKILL)
			killed, deadline = true, time.Now().Add(timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
