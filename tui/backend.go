// Package tui is rein's terminal chat (DESIGN §9, §13: `rein chat`): a
// Bubble Tea program that streams a thread's turns, shows tool calls as
// cards, answers pauses inline, and lets the user steer, queue or interrupt
// the running turn.
//
// The chat drives a [Backend]; [Session] runs its turns on the session
// scheduler, whose threads, turns and steered input are persisted in its
// store (session.NewMemStore keeps them in memory instead).
package tui

import (
	"context"
	"errors"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// Backend runs the turns of threads for the chat. Every method is safe for
// concurrent use; none blocks for the length of a turn.
type Backend interface {
	// NewThread creates an empty thread.
	NewThread(ctx context.Context) (ThreadInfo, error)
	// Resume opens an existing thread and returns its history, for the
	// chat to show what was said.
	Resume(ctx context.Context, threadID string) (ThreadInfo, []llm.Item, error)
	// Threads lists the threads the backend knows, most recent first.
	Threads(ctx context.Context) ([]ThreadInfo, error)

	// Start runs text as a new turn of the thread and returns the turn's
	// id. It fails with ErrBusy when a turn is already running.
	Start(ctx context.Context, threadID, text string) (string, error)
	// Queue runs text as the thread's next turn once the running one ends
	// (in order, first in first out); on an idle thread it starts at once.
	Queue(ctx context.Context, threadID, text string) error
	// Steer adds text to the running turn turnID and returns the id of
	// its item: the engine reads it before its next model request and
	// records it under that id. It fails with ErrNoActiveTurn when the
	// thread is idle and ErrTurnMismatch when another turn runs.
	Steer(ctx context.Context, threadID, turnID, text string) (string, error)
	// Interrupt cancels the running turn turnID; the turn then completes
	// with status interrupted. Interrupting a finished turn is not an
	// error.
	Interrupt(ctx context.Context, threadID, turnID string) error
	// Answer answers the pause the running turn waits on (an ask_user
	// question or an approval), keyed by the answer's turn and call ids.
	Answer(ctx context.Context, threadID string, a loop.Answer) error

	// Compact compacts the thread's history now (a handoff summary the
	// next turns start from), as a turn of its own. It fails with
	// ErrNoCompaction when the backend cannot compact.
	Compact(ctx context.Context, threadID string) error

	// Subscribe returns the thread's events from now on, until the
	// subscription is closed or ctx is done.
	Subscribe(ctx context.Context, threadID string) (Subscription, error)
}

// Subscription delivers a thread's events in order.
type Subscription interface {
	// Next blocks until events arrive and returns all that are waiting.
	// It returns an error once the subscription is closed or ctx is done.
	Next(ctx context.Context) ([]event.Event, error)
	// Close ends the subscription; a blocked Next returns.
	Close()
}

// ThreadInfo describes a thread for the chat's header and /threads.
type ThreadInfo struct {
	ID string
	// Title is the thread's first user message, shortened.
	Title   string
	Created time.Time
	Updated time.Time
	Turns   int
	// Running says a turn of the thread is in progress.
	Running bool
	// Workspace is the directory the thread's turns run in; /threads
	// lists the current workspace's threads.
	Workspace string
	// Model is the thread's model, as provider:model.
	Model string
	// Usage and Cost add up the thread's finished turns, for a resumed
	// thread's footer and /cost.
	Usage llm.Usage
	Cost  float64
}

// Errors of a Backend. Implementations wrap them, so test with errors.Is.
var (
	// ErrBusy: a turn is already running on the thread (queue or steer
	// instead).
	ErrBusy = errors.New("a turn is already running on this thread")
	// ErrNoActiveTurn: steer or interrupt on an idle thread.
	ErrNoActiveTurn = errors.New("no turn is running on this thread")
	// ErrTurnMismatch: the turn named is not the one running.
	ErrTurnMismatch = errors.New("the turn named is not the running turn")
	// ErrNoPause: an answer while nothing waits for one.
	ErrNoPause = errors.New("nothing is waiting for an answer")
	// ErrNoThread: the thread id is unknown.
	ErrNoThread = errors.New("no such thread")
	// ErrNotStored: the backend keeps threads only in this process, so a
	// thread of an earlier run cannot be resumed.
	ErrNotStored = errors.New("threads are not stored: only threads of this chat can be resumed")
	// ErrNoCompaction: the backend has no context window to compact with.
	ErrNoCompaction = errors.New("compaction is not available: no context window is configured")
	// ErrChangedSince: /undo found files changed after the turn it would
	// revert, and restored nothing (Options.Undo wraps it).
	ErrChangedSince = errors.New("files changed after the turn")
	// ErrClosed: the backend was closed.
	ErrClosed = errors.New("the backend is closed")
)
