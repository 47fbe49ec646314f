package store

import (
	"errors"
	"fmt"
)

// Errors callers branch on. They are wrapped with the id they concern, so
// test them with errors.Is.
var (
	// ErrNotFound: no thread or turn with that id.
	ErrNotFound = errors.New("store: not found")
	// ErrTurnActive: the thread already has a running turn (one running
	// turn per thread).
	ErrTurnActive = errors.New("store: the thread has a running turn")
	// ErrTurnEnded: a turn that has ended was claimed to run again.
	ErrTurnEnded = errors.New("store: the turn has ended; start a new one")
	// ErrTurnNotRunning: input was steered into a turn that is not running.
	ErrTurnNotRunning = errors.New("store: the turn is not running")
	// ErrPaused: the thread's latest turn is paused waiting for the user;
	// answer it, or close it with Abandon, before starting another.
	ErrPaused = errors.New("store: the thread's latest turn is paused, waiting for an answer")
	// ErrNotPlaceholder: an item id was recorded again, but the stored item
	// is not a pause placeholder. History is append-only; only a pending
	// result is ever replaced.
	ErrNotPlaceholder = errors.New("store: the item exists and is not a pause placeholder; history is append-only")
	// ErrSchemaTooNew: the database was written by a newer rein.
	ErrSchemaTooNew = errors.New("store: the database schema is newer than this rein; upgrade rein")
	// ErrReadOnly: the store was opened to read only, its file being
	// impossible to write (a read-only file system or file).
	ErrReadOnly = errors.New("store: the database cannot be written here (read-only file or file system); it was opened to read only")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// TurnActiveError is the error for claiming a thread whose turn is running
// in a live process (this one or another): it names the running turn and
// who runs it. It matches ErrTurnActive.
type TurnActiveError struct {
	ThreadID, TurnID string
	// Owner is who runs the turn; its zero value when the turn was stored
	// without one.
	Owner Owner
}

func (e *TurnActiveError) Error() string {
	who := "another process"
	if e.Owner.PID > 0 {
		who = e.Owner.String()
		if stored, _ := parseOwner(owner); stored.Host == e.Owner.Host && stored.PID == e.Owner.PID {
			who = "this process"
		}
	}
	return fmt.Sprintf("thread %s: turn %s is running in %s; one turn runs per thread: wait for it to end, or interrupt it there", e.ThreadID, e.TurnID, who)
}

// Is makes the error match ErrTurnActive.
func (e *TurnActiveError) Is(target error) bool { return target == ErrTurnActive }
