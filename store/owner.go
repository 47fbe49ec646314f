package store

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// An owner names the process running a turn: "host:pid:token". The token
// is the process's start time as the kernel reports it (Linux), so a pid
// reused by a later process is not taken for the owner; where it cannot be
// read it is random and only the pid is checked. Turns stored by older
// versions carry "host:pid" and are judged by the pid alone.
//
// This is the embedded store's form of a lease: the owner is live while its
// process is. A store shared by several machines (PostgreSQL) holds the same
// claim through a lease with a heartbeat instead; the rule callers see is
// the same (ClaimTurn).
var owner = func() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	token, ok := processToken(pid)
	if !ok {
		var b [8]byte
		rand.Read(b[:])
		token = "r" + hex.EncodeToString(b[:])
	}
	return host + ":" + strconv.Itoa(pid) + ":" + token
}()

// Owner is who runs a turn, parsed from its stored form.
type Owner struct {
	Host string
	PID  int
	// Token tells a process from a later one with the same pid; "" when
	// the turn was stored without one.
	Token string
}

// parseOwner reads "host:pid[:token]"; ok is false for anything else.
func parseOwner(s string) (o Owner, ok bool) {
	host, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Owner{}, false
	}
	pid, token, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return Owner{}, false
	}
	return Owner{Host: host, PID: n, Token: token}, true
}

// String names the owner for a person: which process on which host.
func (o Owner) String() string {
	return fmt.Sprintf("process %d on %s", o.PID, o.Host)
}

// live holds the turns this process started and has not finished; shared
// by every Store of the process, so a second Store never cuts the first
// one's turn. unrecorded holds, for turns of this process whose end could
// not be written, the write error: a later load says that, not that the
// process stopped.
var live struct {
	sync.Mutex
	turns      map[string]bool
	unrecorded map[string]error
}

func liveAdd(turnID string) {
	live.Lock()
	defer live.Unlock()
	if live.turns == nil {
		live.turns = make(map[string]bool)
	}
	live.turns[turnID] = true
	delete(live.unrecorded, turnID)
}

func liveDel(turnID string) {
	live.Lock()
	defer live.Unlock()
	delete(live.turns, turnID)
}

// lost records that the end of a turn this process ran could not be
// written, and why; the turn is no longer live.
func lost(turnID string, err error) {
	live.Lock()
	defer live.Unlock()
	delete(live.turns, turnID)
	if live.unrecorded == nil {
		live.unrecorded = make(map[string]error)
	}
	live.unrecorded[turnID] = err
}

// unrecordedErr returns the write error that kept a turn's end from being
// stored, or nil.
func unrecordedErr(turnID string) error {
	live.Lock()
	defer live.Unlock()
	return live.unrecorded[turnID]
}

// forgetUnrecorded drops turns once their end is stored (committed: a
// write that fails at its commit has not stored it).
func forgetUnrecorded(turnIDs ...string) {
	live.Lock()
	defer live.Unlock()
	for _, id := range turnIDs {
		delete(live.unrecorded, id)
	}
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
	o, ok := parseOwner(who)
	if !ok {
		return true
	}
	me, _ := parseOwner(owner)
	if o.Host != me.Host {
		return false
	}
	if !processAlive(o.PID) {
		return true
	}
	if o.Token == "" {
		return false
	}
	// The pid is taken: by the owner, or by a later process.
	token, ok := processToken(o.PID)
	return ok && token != o.Token
}
