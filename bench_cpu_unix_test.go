//go:build unix

package rein_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far, every thread's
// (the garbage collector's too): a benchmark's cost that the machine's
// load does not inflate as it does the wall clock.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
