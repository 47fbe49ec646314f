package session

import (
	"errors"
	"fmt"
)

// ErrNoActiveTurn is returned when steering or interrupting a thread that
// has no running or paused turn.
var ErrNoActiveTurn = errors.New("session: the thread has no active turn; start one instead")

// ErrTurnPaused is wrapped by the error for starting or steering a turn
// while the thread's turn waits for the user: answer it or interrupt it
// first.
var ErrTurnPaused = errors.New("session: the thread's turn is paused waiting for the user; answer or interrupt it first")

// ErrTurnBusy is matched (errors.Is) by the error for starting, resuming
// or answering a turn on a thread whose turn runs elsewhere: in another
// process or scheduler sharing the store. The error names the running turn
// and who runs it; wait for it to end, or interrupt it where it runs.
var ErrTurnBusy = errors.New("session: the thread has a turn running in another process")

// busyError gives a store's refusal to claim a thread the meaning
// ErrTurnBusy, keeping its text (which names the turn and its process) and
// what it wraps.
type busyError struct{ err error }

func (e busyError) Error() string        { return e.err.Error() }
func (e busyError) Unwrap() error        { return e.err }
func (e busyError) Is(target error) bool { return target == ErrTurnBusy }

// Stop reasons of turns the engine did not end.
const (
	// StopStoreError: a write of the turn to the store failed (a full
	// disk); the turn ended failed with the write error, whatever the
	// engine reported.
	StopStoreError = "store_error"
	// StopNotStarted: a queued turn could not be claimed when its turn
	// came (another process runs a turn of the thread, or the store
	// failed); it ended failed without running.
	StopNotStarted = "not_started"
)

// ErrClosed is returned once the scheduler is closed.
var ErrClosed = errors.New("session: the scheduler is closed")

// ErrEmptyInput is returned for input without any text or other part.
var ErrEmptyInput = errors.New("session: the input is empty; send at least one part")

// TurnMismatchError is returned when a request names a turn that is not the
// thread's active one (a steer raced the end of the turn it meant).
type TurnMismatchError struct {
	// Expected is the turn the caller named; Active is the one running.
	Expected, Active string
}

func (e *TurnMismatchError) Error() string {
	return fmt.Sprintf("session: turn %q is not the active turn (the active turn is %q); read the thread and retry with the active turn's id", e.Expected, e.Active)
}
