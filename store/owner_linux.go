//go:build linux

package store

import (
	"os"
	"strconv"
	"strings"
)

// processToken returns the start time of process pid (field 22 of
// /proc/PID/stat, in clock ticks since boot), which tells it from a later
// process given the same pid.
func processToken(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself: the fields after it start past the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	const startTime = 22 - 3 // fields after the name start at field 3
	if len(f) <= startTime {
		return "", false
	}
	return "t" + f[startTime], true
}
