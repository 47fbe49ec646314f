package store

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// owner names this process in turns it runs: host and process id.
var owner = func() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}()

// live holds the turns this process started and has not finished; shared
// by every Store of the process, so a second Store never cuts the first
// one's turn.
var live struct {
	sync.Mutex
	turns map[string]bool
}

func liveAdd(turnID string) {
	live.Lock()
	defer live.Unlock()
	if live.turns == nil {
		live.turns = make(map[string]bool)
	}
	live.turns[turnID] = true
}

func liveDel(turnID string) {
	live.Lock()
	defer live.Unlock()
	delete(live.turns, turnID)
}

// isCut reports whether a turn recorded as running by who is cut: its
// process is gone, or it is this process and the turn is not one it runs.
// A turn of another host is never taken for cut: its process cannot be
// checked from here.
func isCut(turnID, who string) bool {
	if who == owner {
		live.Lock()
		defer live.Unlock()
		return !live.turns[turnID]
	}
	host, pid, ok := strings.Cut(who, ":")
	me, _, _ := strings.Cut(owner, ":")
	if !ok || host != me {
		return !ok
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return true
	}
	return !processAlive(n)
}
