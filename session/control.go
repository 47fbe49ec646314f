package session

import (
	"context"
	"errors"

	"github.com/reinhq/rein/llm"
)

// SharedStore is a Store several nodes share (package pgstore): a turn runs
// on one node, and any node accepts control of it. A scheduler whose store
// implements it controls turns that run on other nodes: steered input and
// interrupts are committed to the store first, then a Notice (Config.Control)
// asks the node running the turn to read them; that node also reads them at
// each of the turn's round boundaries, so a notice lost on the way delays
// the control, never drops it. The store is the only truth.
type SharedStore interface {
	Store
	// Pending returns what other nodes left for running turn turnID of
	// thread threadID: its steered input not yet in the history, in the
	// order accepted, and whether an interrupt was asked for.
	Pending(ctx context.Context, threadID, turnID string) (Pending, error)
	// RequestInterrupt asks, durably, that turn turnID stop: a running
	// turn is marked for its node to cancel (it reads the mark with
	// Pending), a queued one ends interrupted at once. It returns the
	// turn's status as found; a paused turn, or one that has ended, is
	// left as it is (the caller abandons a paused turn itself).
	RequestInterrupt(ctx context.Context, threadID, turnID string) (TurnStatus, error)
	// QueuedTurns returns the thread's queued turns in the order they
	// were queued, by any node.
	QueuedTurns(ctx context.Context, threadID string) ([]Turn, error)
}

// Pending is what other nodes left for a running turn.
type Pending struct {
	// Steers is the steered input accepted for the turn and not yet in
	// the history.
	Steers []llm.Item
	// Interrupt says an interrupt of the turn was asked for.
	Interrupt bool
}

// Notice asks the node that runs a thread's turn to read the store for it
// now: steered input or an interrupt was committed there. It carries no
// content: a node believes only the store.
type Notice struct {
	ThreadID string `json:"thread_id"`
	TurnID   string `json:"turn_id"`
}

// Control carries notices to the node that runs a turn (package
// redisrelay: Redis pub/sub). Delivery is best effort: a node that misses
// a notice reads the store at the turn's next round boundary.
type Control interface {
	Notify(ctx context.Context, n Notice) error
}

// ErrTurnNotRunning is matched by a store's error for input steered into a
// turn that is not running (anywhere).
var ErrTurnNotRunning = errors.New("session: the turn is not running")

// MaxPendingSteers bounds the steered input a turn holds unread, on every
// store: a client steering faster than the turn's rounds read would grow
// the turn's next request (and its cost) without limit.
const MaxPendingSteers = 256

// ErrTooManySteers is matched by the error for input steered into a turn
// that has not read MaxPendingSteers earlier ones yet (its round runs
// long): wait for the turn to read them, or interrupt it.
var ErrTooManySteers = errors.New("session: too many steered inputs waiting; wait for the turn to read them")
