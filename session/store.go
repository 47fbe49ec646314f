package session

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
)

// Store is what the scheduler needs from persistence. Every method is
// called with the thread's scheduling lock released, so an implementation
// may take as long as a durable write takes; it must be safe for concurrent
// use by different threads.
type Store interface {
	// SaveThread creates or updates a thread's record.
	SaveThread(ctx context.Context, th Thread) error
	// LoadThread returns a thread with its turns and items, normalized
	// (DESIGN §2.5: a turn cut by a crash is interrupted and its calls are
	// answered), and the steered input of its turns that no turn has read
	// yet (Snapshot.Steers). A missing thread is an error matching
	// ErrThreadNotFound.
	LoadThread(ctx context.Context, id string) (*Snapshot, error)
	// ListThreads returns up to limit threads that users started (not
	// sub-agents' threads: ThreadTree lists those), most recently updated first,
	// starting after cursor (""), and the cursor of the next page ("" at
	// the end).
	ListThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error)
	// Record appends an item to a thread, or replaces the item with the same
	// id (a pause placeholder replaced by its answer). It is the engine's
	// journal: each item is committed when produced.
	Record(ctx context.Context, threadID string, it llm.Item) error
	// SaveTurn creates or updates a turn's record. A paused turn carries the
	// State it resumes from; other turns carry none. The scheduler makes a
	// turn inProgress with ClaimTurn, never with SaveTurn.
	SaveTurn(ctx context.Context, t Turn) error
	// ClaimTurn makes t the thread's running turn (inProgress) in one
	// atomic operation: a new turn, a queued one, or a paused one being
	// answered. It is what keeps one turn running per thread across every
	// scheduler, process and machine sharing the store: while another runs
	// a turn of the thread it fails with an error matching ErrTurnBusy
	// that names that turn and who runs it. A turn whose runner is gone
	// (a crash) is recovered first, as LoadThread does.
	ClaimTurn(ctx context.Context, t Turn) (Claim, error)
	// AddSteer persists input accepted for a running turn before the turn
	// reads it. The item has its id; when the turn reads it, Record
	// commits it to the history under the same id, which marks it read.
	AddSteer(ctx context.Context, threadID, turnID string, it llm.Item) error
}

// ThreadTree is implemented by a Store that keeps sub-agents' threads
// (Thread.Parent links each to the call that ran it): MemStore, SQLStore
// and pgstore's.
type ThreadTree interface {
	// ListChildren returns the threads of the sub-agents that turns of
	// thread id ran, oldest first.
	ListChildren(ctx context.Context, id string) ([]Thread, error)
	// ListAllThreads is ListThreads with sub-agents' threads listed too.
	ListAllThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error)
}

// Claim is what claiming a turn found.
type Claim struct {
	// Items is how many items the thread's history holds once the turn is
	// claimed. A scheduler whose history of the thread holds another
	// number reads the thread again before the turn runs: another process
	// wrote to it.
	Items int
}

// ErrThreadNotFound is matched (errors.Is) by the error for a thread the
// store does not hold.
var ErrThreadNotFound = errors.New("session: no such thread")

// Thread is a conversation's record (package record's; the alias keeps
// the runtime's name for it).
type Thread = record.Thread

// ThreadConfig is how a thread's turns run: record.Settings. Empty fields
// take the server's defaults.
type ThreadConfig = record.Settings

// TurnStatus is where a turn is in its life: record.Status.
type TurnStatus = record.Status

// Turn statuses, record's. The server protocol spells TurnInProgress
// "inProgress" (package protocol).
const (
	TurnQueued      = record.StatusQueued
	TurnInProgress  = record.StatusRunning
	TurnPaused      = record.StatusPaused
	TurnCompleted   = record.StatusCompleted
	TurnInterrupted = record.StatusInterrupted
	TurnFailed      = record.StatusFailed
)

// Turn is a turn's record (package record's). A paused turn's State is its
// engine state as JSON (a loop.State): everything needed to resume it in
// this process or another.
type Turn = record.Turn

// Snapshot is a thread as loaded: its record, its turns in order and its
// items in history order. Its wire form is package protocol's
// (protocol.ReadOf).
type Snapshot struct {
	Thread Thread
	Turns  []Turn
	Items  []llm.Item
	// Steers holds, by turn id, the input steered into a turn and not yet
	// in the history, in the order it was accepted: what a process that
	// stopped before the turn read it leaves behind. A scheduler opening
	// the thread hands it back (see Scheduler.ResumeThread). Turns still
	// running in another process are left out.
	Steers map[string][]llm.Item
}

// encodeState is a paused turn's engine state for its record. A state that
// does not encode (it always does: it is plain data) leaves the record
// without one, which the store refuses as a pause nothing could resume.
func encodeState(st *loop.State) json.RawMessage {
	b, err := json.Marshal(st)
	if err != nil {
		return nil
	}
	return b
}

// pausedState is the engine state of a paused turn's record, nil when it
// has none or it does not decode (SQLStore.LoadThread refuses a state that
// is not JSON; one the engine wrote decodes).
func pausedState(rec *Turn) *loop.State {
	if len(rec.State) == 0 {
		return nil
	}
	st := new(loop.State)
	if err := json.Unmarshal(rec.State, st); err != nil {
		return nil
	}
	return st
}
