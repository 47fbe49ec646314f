package agent

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/undo"
)

// UndoOptions say which turn of a thread to undo.
type UndoOptions struct {
	// Turn is the turn to undo; "" is the latest one with file changes
	// not undone.
	Turn string
	// Force restores over files changed after the turn.
	Force bool
	// Sandbox are the config's [sandbox] settings: the workspace is
	// opened with its deny list, as the turn's tools saw it.
	Sandbox sandbox.Options
}

// Undo reverts what a turn of thread wrote in the thread's workspace
// through the file tools (undo.Restore): every door's undo — `rein undo`,
// the chat's /undo, a library caller. It refuses while a turn of the
// thread runs, and returns an *undo.ConflictError naming the files changed
// after the turn, restoring nothing, unless o.Force.
func Undo(ctx context.Context, st *store.Store, thread string, o UndoOptions) (*undo.Result, error) {
	snap, err := st.Load(ctx, thread)
	if err != nil {
		return nil, err
	}
	if last := snap.Last(); last != nil && last.Status == store.StatusRunning {
		return nil, fmt.Errorf("thread %s: turn %s is running; interrupt it or wait for it to end before undoing", thread, last.ID)
	}
	dir := snap.Thread.Settings.Workspace
	if dir == "" {
		return nil, fmt.Errorf("thread %s keeps no workspace: %w", thread, undo.ErrNothing)
	}
	ws, err := sandbox.OpenOptions(dir, o.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("thread %s: its workspace: %w", thread, err)
	}
	defer ws.Close()
	return undo.Restore(ctx, ws, st, thread, undo.Options{Turn: o.Turn, Force: o.Force})
}
