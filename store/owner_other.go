//go:build !unix

package store

// processAlive cannot tell here, so it says alive: a turn of another
// process is never cut by mistake; one of this process is judged by the
// live set alone.
func processAlive(pid int) bool { return true }
