// Package store keeps rein's threads in SQLite (DESIGN §9): threads, turns,
// items, pauses and steered input, in one file opened in WAL mode through the
// pure-Go driver modernc.org/sqlite.
//
// # Durability
//
// Every item is committed when it is produced: [Store.Record] (the engine's
// loop.Journal) returns only after the transaction holding the item has
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
// A turn becomes running only through [Store.ClaimTurn] ([Store.SaveTurn]
// of a running turn uses it): one write that checks the
// thread has no other running turn of a live process, records the turn as
// running with its owner, and returns how many items the thread holds, so a
// caller that keeps the history in memory sees that another process went
// on. Every process, command and server sharing the file goes through it,
// so one turn runs per thread across all of them; the loser gets a
// [*TurnActiveError] naming the running turn and its process. A turn is
// ended with [Store.SaveTurn].
//
// A turn that was running when its process died is cut: [Store.Normalize]
// (also run by [Store.Load], [Store.ClaimTurn] and [Store.DeleteThread])
// marks it interrupted, answers its unanswered calls as aborted, appends the
// steered input it never read and a marker item telling the model the turn
// was cut (DESIGN §2.5). A paused turn keeps its engine state (a
// loop.State, as JSON the store keeps whole, read with [Store.LoadPause]);
// claiming the paused turn hands it to exactly one process to continue with
// loop.Engine.Resume. The store does
// not import the engine: its threads and turns are package record's.
//
// Whether a running turn is cut is decided from its owner: host, process id
// and the process's start time (Linux), so a pid reused by a later process
// does not keep a dead turn alive. A turn of a process that no longer
// exists (or of this process, but not started by it in its lifetime) is
// cut; a turn of a live process is left alone, so `rein sessions show`
// never breaks a turn running in another terminal. A store shared by
// several machines holds the same claim with a lease instead (DESIGN §9.1).
//
// # Failed writes
//
// A write that fails (a full disk, a read-only file) is returned to its
// caller, never turned into another status. A turn whose end could not be
// written is closed, once the store can be written again (at the next
// claim of its thread, or when its process closes the store), as failed
// with stop reason [StopStoreError] and the write error, not as cut.
// Reading needs no write: [Store.Load] writes only to close a cut turn,
// and when that write fails it closes the turn in the snapshot alone,
// exactly as the write would have.
package store
