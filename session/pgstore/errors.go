package pgstore

import (
	"errors"
	"fmt"

	"github.com/reinhq/rein/session"
)

// ErrLeaseLost is matched by the error for a write of a turn whose lease
// this node no longer holds: it expired and another node took the turn (or
// ended it). The write did not happen; the node must stop running the turn.
var ErrLeaseLost = errors.New("pgstore: this node's lease on the turn was lost; another node runs it now")

// LeaseLostError is the refusal of a fenced write: it names the turn, the
// token the writer held and the one the turn has now. It matches
// ErrLeaseLost.
type LeaseLostError struct {
	TurnID string
	// Held is the writer's token; Current the turn's (0 when the turn no
	// longer runs under any lease).
	Held, Current int64
	// Node is who holds the turn now ("" when nobody does).
	Node string
}

func (e *LeaseLostError) Error() string {
	who := "no node (it has ended)"
	if e.Node != "" {
		who = "node " + e.Node
	}
	return fmt.Sprintf("pgstore: turn %s: the write under lease %d was refused: the turn's lease is %d, held by %s; this node must stop running it", e.TurnID, e.Held, e.Current, who)
}

// Is makes the error match ErrLeaseLost and session.ErrLeaseLost.
func (e *LeaseLostError) Is(target error) bool {
	return target == ErrLeaseLost || target == session.ErrLeaseLost
}

// ErrSchemaTooNew: the database was migrated by a newer rein.
var ErrSchemaTooNew = errors.New("pgstore: the database schema is newer than this rein; upgrade rein")

// busyError is the refusal to claim a thread whose turn another live lease
// holds; it matches session.ErrTurnBusy.
type busyError struct {
	ThreadID, TurnID, Node string
}

func (e *busyError) Error() string {
	return fmt.Sprintf("thread %s: turn %s is running on node %s; one turn runs per thread: wait for it to end, or interrupt it there", e.ThreadID, e.TurnID, e.Node)
}

func (e *busyError) Is(target error) bool { return target == session.ErrTurnBusy }

// notFound is the error for a thread the database does not hold.
func notFound(threadID string) error {
	return fmt.Errorf("%w: %q", session.ErrThreadNotFound, threadID)
}
