package store

import "errors"

// Errors callers branch on. They are wrapped with the id they concern, so
// test them with errors.Is.
var (
	// ErrNotFound: no thread or turn with that id.
	ErrNotFound = errors.New("store: not found")
	// ErrTurnActive: the thread already has a running turn (one running
	// turn per thread).
	ErrTurnActive = errors.New("store: the thread has a running turn")
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
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)
