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
