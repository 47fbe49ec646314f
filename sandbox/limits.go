package sandbox

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of Limits.
const (
	DefaultMemory    = 2 << 30
	DefaultProcs     = 1024
	DefaultFileSize  = 1 << 30
	DefaultOpenFiles = 1024
)

// Limits bound what the processes of a command may use. They are resource
// limits (setrlimit), set by util-linux's prlimit just before the command
// starts (inside bubblewrap, when there is one), so each process of the
// command inherits them and each is held to them on its own, except Procs,
// which counts them all. They are not a cgroup: ten processes may use ten
// times Memory, and files in the private /tmp take memory too.
//
// Zero means the default; a negative value means no limit. A limit above
// the one rein itself runs under is lowered to it.
type Limits struct {
	// Memory is how much memory each process may allocate, in bytes
	// (RLIMIT_DATA: its heap and private writable mappings, which is
	// what malloc, mmap and thread stacks take). Address space a program
	// only reserves is not counted, so runtimes that reserve large regions
	// up front (Go, the JVM, V8) still start. An allocation beyond it
	// fails: Python raises MemoryError, Go and C programs die with "out of
	// memory". DefaultMemory is 2 GiB.
	Memory int64
	// CPU is the processor time each process may use (RLIMIT_CPU), in
	// whole seconds rounded up: at CPU the process gets SIGXCPU, which
	// ends it unless it is caught, and a second later SIGKILL. Zero means
	// the command's Timeout, so that a process with several threads is
	// stopped as soon as it has spent that much; without a Timeout there
	// is no CPU limit.
	CPU time.Duration
	// Procs is how many processes and threads the command may run at once
	// (RLIMIT_NPROC); a fork beyond it fails with EAGAIN, which contains a
	// fork bomb. The kernel counts tasks per user per user namespace, so
	// inside bubblewrap's user namespace it counts the sandbox's own, and
	// Procs is the sandbox's budget. On the host it would count every
	// process of the user, so without bubblewrap it is not set; and the
	// kernel exempts root (uid 0 of the host), so when rein runs as root a
	// fork bomb is ended only by the timeout. Report.ProcLimit says whether
	// it binds here. Threads count: DefaultProcs (1024) leaves room for
	// go build or a JVM, whose every thread is a task.
	Procs int
	// FileSize is the largest file a process may write, in bytes
	// (RLIMIT_FSIZE): a write beyond it gets SIGXFSZ, which ends the
	// process unless it is caught, and then fails with EFBIG.
	// DefaultFileSize is 1 GiB.
	FileSize int64
	// OpenFiles is how many files each process may have open at once
	// (RLIMIT_NOFILE). DefaultOpenFiles is 1024.
	OpenFiles int
}

func (l Limits) withDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Procs == 0 {
		l.Procs = DefaultProcs
	}
	if l.FileSize == 0 {
		l.FileSize = DefaultFileSize
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	return l
}

// cpuSeconds is the CPU limit for a command with that timeout, in whole
// seconds, or 0 for none.
func (l Limits) cpuSeconds(timeout time.Duration) uint64 {
	d := l.CPU
	if d == 0 {
		d = timeout
	}
	if d <= 0 {
		return 0
	}
	return uint64(math.Ceil(d.Seconds()))
}

// resource is one rlimit prlimit sets.
type resource struct {
	flag     string // prlimit's option
	resource int    // for Getrlimit
	soft     uint64
	hard     uint64
}

// resources returns the limits to set for a command with that timeout;
// procs says whether to set the process limit.
func (l Limits) resources(timeout time.Duration, procs bool) []resource {
	var rs []resource
	add := func(flag string, res int, v int64) {
		if v > 0 {
			rs = append(rs, resource{flag, res, uint64(v), uint64(v)})
		}
	}
	add("--data", unix.RLIMIT_DATA, l.Memory)
	if s := l.cpuSeconds(timeout); s > 0 {
		// SIGXCPU at the soft limit names the cause; SIGKILL a second
		// later ends a process that ignores it.
		rs = append(rs, resource{"--cpu", unix.RLIMIT_CPU, s, s + 1})
	}
	if procs {
		add("--nproc", unix.RLIMIT_NPROC, int64(l.Procs))
	}
	add("--fsize", unix.RLIMIT_FSIZE, l.FileSize)
	add("--nofile", unix.RLIMIT_NOFILE, int64(l.OpenFiles))
	// SIGXCPU and SIGXFSZ dump core by default: not into the workspace.
	rs = append(rs, resource{"--core", unix.RLIMIT_CORE, 0, 0})
	return rs
}

// prlimitArgs returns the program and options that start a command under
// the limits: prlimit at path, each limit, then "--". A limit above rein's
// own hard limit is lowered to it, since raising a hard limit needs
// privilege and prlimit would refuse to start the command.
func prlimitArgs(path string, rs []resource) []string {
	args := []string{path}
	for _, r := range rs {
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.resource, &cur); err == nil && cur.Max != unix.RLIM_INFINITY {
			r.hard = min(r.hard, cur.Max)
			r.soft = min(r.soft, r.hard)
		}
		args = append(args, r.flag+"="+strconv.FormatUint(r.soft, 10)+":"+strconv.FormatUint(r.hard, 10))
	}
	return append(args, "--")
}

// describe describes the limits for a model or a user, with the CPU limit
// of a command that has no Timeout; procs says whether Procs binds.
func (l Limits) describe(procs bool) string {
	l = l.withDefaults()
	var parts []string
	if l.Memory > 0 {
		parts = append(parts, FormatBytes(l.Memory)+" of memory")
	}
	switch {
	case l.CPU > 0:
		parts = append(parts, fmt.Sprintf("%d s of CPU time", l.cpuSeconds(0)))
	case l.CPU == 0:
		parts = append(parts, "as much CPU time as its timeout")
	}
	if l.FileSize > 0 {
		parts = append(parts, "files up to "+FormatBytes(l.FileSize))
	}
	if l.OpenFiles > 0 {
		parts = append(parts, fmt.Sprintf("%d open files", l.OpenFiles))
	}
	s := "each process may use " + strings.Join(parts, ", ")
	if procs && l.Procs > 0 {
		s += fmt.Sprintf("; at most %d processes and threads run at once", l.Procs)
	}
	return s
}

// FormatBytes writes n bytes in the largest binary unit that divides it,
// such as "2 GiB" or "1536 KiB".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// limitHit names the limit that ended a command, from how it ended: the
// signal the kernel sends at the CPU or file-size limit, seen directly or
// as the 128+signal status a shell or bwrap reports. It is "" when no
// limit is recognised; memory cannot be told from the status, since an
// allocation that fails is the program's to report.
func limitHit(ws syscall.WaitStatus, l Limits, timeout time.Duration) string {
	sig := syscall.Signal(-1)
	if ws.Signaled() {
		sig = ws.Signal()
	} else if c := exitCode(ws); c > 128 && c < 128+65 {
		sig = syscall.Signal(c - 128)
	}
	switch {
	case sig == syscall.SIGXCPU && l.cpuSeconds(timeout) > 0:
		return fmt.Sprintf("SIGXCPU: the CPU time limit (%d s per process) was reached", l.cpuSeconds(timeout))
	case sig == syscall.SIGXFSZ && l.FileSize > 0:
		return fmt.Sprintf("SIGXFSZ: the file size limit (%s per file) was reached", FormatBytes(l.FileSize))
	}
	return ""
}
