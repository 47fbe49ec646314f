// Package undo makes a turn's changes to the workspace revertible: the
// file tools that write (write_file, edit_file) are wrapped so that the
// first time a turn touches a file its before-image is kept, keyed by
// thread and turn, and what the turn left is noted after every write.
// Restore puts the files back as they were before the turn, but never
// over a file the user changed after it (its content is no longer what the
// turn left) unless forced. Commands run by exec cannot be followed file by
// file: a turn that ran one is marked, and its undo says so.
//
// It is not git: nothing outside the turn's own writes is touched, and a
// workspace need not be a repository.
package undo

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// DefaultMaxFile bounds one before-image: a file larger than this is not
// snapshotted, and its turn cannot restore it (Restore says so).
const DefaultMaxFile = 8 << 20

// DefaultMaxTurn bounds the before-images of one turn together.
const DefaultMaxTurn = 64 << 20

// Kind says what an entry of a turn's journal is.
type Kind string

const (
	// KindFile is a file the turn wrote through the file tools.
	KindFile Kind = "file"
	// KindExec marks a turn that ran commands in the workspace, whose
	// changes undo cannot see.
	KindExec Kind = "exec"
)

// Entry is one thing a turn changed.
type Entry struct {
	Thread, Turn string
	Kind         Kind
	// Path is the file's workspace-relative slash path (KindFile).
	Path string
	// Existed says the file was there before the turn; Before is its
	// content then and Mode its permission bits.
	Existed bool
	Before  []byte
	Mode    uint32
	// TooLarge says the before-image was over the bound and not kept:
	// the file cannot be restored.
	TooLarge bool
	// After is the SHA-256 (hex) of what the turn left, "" when it left no
	// file there.
	After string
	// Undone says the turn's changes were restored.
	Undone bool
}

// Journal keeps turns' entries; the store implements it.
type Journal interface {
	// AddUndo keeps e when the turn has no entry for its path (or, for
	// KindExec, no exec entry) yet: the first touch's before-image wins.
	// It reports whether e was added.
	AddUndo(ctx context.Context, e Entry) (bool, error)
	// SetUndoAfter notes what the turn left at path (hash "" for no file).
	SetUndoAfter(ctx context.Context, thread, turn, path, hash string) error
	// UndoEntries returns a turn's entries in the order they were added.
	UndoEntries(ctx context.Context, thread, turn string) ([]Entry, error)
	// UndoTurns returns the thread's turns that have entries not undone,
	// the latest first.
	UndoTurns(ctx context.Context, thread string) ([]string, error)
	// MarkUndone marks a turn's entries restored.
	MarkUndone(ctx context.Context, thread, turn string) error
	// UndoSize is the bytes of before-images a turn keeps.
	UndoSize(ctx context.Context, thread, turn string) (int64, error)
}

// ErrNothing: the thread has no turn whose file changes can be undone.
var ErrNothing = errors.New("undo: nothing to undo")

// Conflict is a file the user (or a later turn) changed after the turn:
// restoring it would lose that change.
type Conflict struct {
	Path string
	// Why says what is there now.
	Why string
}

// ConflictError refuses a restore that would overwrite changes made after
// the turn; nothing was restored. Force restores anyway.
type ConflictError struct {
	Turn      string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "undo: turn %s: %d file(s) changed after the turn; nothing was restored, so those changes are kept:", e.Turn, len(e.Conflicts))
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  %s (%s)", c.Path, c.Why)
	}
	b.WriteString("\nundo the later turns first, or restore anyway with --force (their changes are lost)")
	return b.String()
}
