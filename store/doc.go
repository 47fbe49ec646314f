// Package store keeps rein's threads in SQLite (DESIGN §9): threads, turns,
// items, pauses and steered input, in one file opened in WAL mode through the
// pure-Go driver modernc.org/sqlite.
//
// # Durability
//
// Every item is committed when it is produced: [Store.Record] (the engine's
// [loop.Journal]) returns only after the transaction holding the item has
// committed, so an assistant item with its calls is on disk before the
// results that answer it. Writes from many goroutines are group-committed:
// one writer connection takes whatever writes are waiting and commits them in
// one transaction (each in its own savepoint, so one failing write does not
// take the others with it). A lone writer pays one commit per item; many
// concurrent turns share commits.
//
// With the default [SyncFull] every commit is synced to the disk before it is
// reported. [SyncNormal] syncs only at WAL checkpoints: a commit still
// survives the process being killed, but a power loss may drop the last
// commits (a suffix, never an item from the middle, so history stays valid).
//
// # Threads that last
//
// A turn is started with [Store.StartTurn] and ended with [Store.FinishTurn].
// A turn that was running when its process died is cut: [Store.Normalize]
// (also run by [Store.Load] and [Store.StartTurn]) marks it interrupted,
// answers its unanswered calls as aborted, appends the steered input it never
// read and a marker item telling the model the turn was cut (DESIGN §2.5).
// A paused turn keeps its [loop.State]; [Store.ResumeTurn] hands it to
// exactly one process to continue with [loop.Engine.Resume].
//
// Whether a running turn is cut is decided from its owner, the host and
// process id that started it: a turn of a process that no longer exists (or
// of this process, but not started by it in its lifetime) is cut; a turn of
// a live process is left alone, so `rein sessions show` never breaks a turn
// running in another terminal.
package store
