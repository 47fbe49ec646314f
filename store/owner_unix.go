//go:build unix

package store

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with pid exists. A process killed
// but not yet reaped by its parent (a zombie) still counts as alive.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
