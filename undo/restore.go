package undo

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"

	"github.com/reinhq/rein/sandbox"
)

// Options say which turn to undo and how.
type Options struct {
	// Turn is the turn to undo; "" is the thread's latest turn with
	// changes not undone yet.
	Turn string
	// Force restores over files changed after the turn, and restores what
	// can be when some file's before-image was too large to keep.
	Force bool
}

// Result is what Restore did.
type Result struct {
	Turn string
	// Restored are the files written back as they were; Removed the files
	// the turn created, removed again.
	Restored, Removed []string
	// Overwritten are the files changed after the turn that Force wrote
	// over (a subset of Restored and Removed).
	Overwritten []string
	// Skipped are files whose before-image was too large to keep: left as
	// they are.
	Skipped []string
	// Untracked says the turn ran commands (exec) whose changes to the
	// workspace undo cannot see: they are not reverted.
	Untracked bool
}

// Summary says in a line or two what was restored and what was not.
func (r *Result) Summary() string {
	s := fmt.Sprintf("turn %s undone: %d file(s) restored, %d removed", r.Turn, len(r.Restored), len(r.Removed))
	if len(r.Overwritten) > 0 {
		s += fmt.Sprintf("; %d changed after the turn were overwritten (--force)", len(r.Overwritten))
	}
	if len(r.Skipped) > 0 {
		s += fmt.Sprintf("; %d too large to have been kept, left as they are: %v", len(r.Skipped), r.Skipped)
	}
	if r.Untracked {
		s += "\nthe turn also ran commands (exec); what they changed in the workspace is not tracked and was not reverted"
	}
	return s
}

// Restore undoes a turn of thread in the workspace ws: each file the
// turn's file tools wrote gets its content from before the turn back, and
// each file the turn created is removed. A file whose content is no longer
// what the turn left was changed after it; without o.Force nothing is
// restored and a *ConflictError lists those files. A turn undone once is
// not undone again.
func Restore(ctx context.Context, ws *sandbox.Workspace, j Journal, thread string, o Options) (*Result, error) {
	turn := o.Turn
	if turn == "" {
		turns, err := j.UndoTurns(ctx, thread)
		if err != nil {
			return nil, err
		}
		if len(turns) == 0 {
			return nil, fmt.Errorf("thread %s: %w: no turn of it changed files through the file tools, or every one is undone", thread, ErrNothing)
		}
		turn = turns[0]
	}
	entries, err := j.UndoEntries(ctx, thread, turn)
	if err != nil {
		return nil, err
	}
	r := &Result{Turn: turn}
	var files []Entry
	for _, e := range entries {
		if e.Undone {
			return nil, fmt.Errorf("thread %s: turn %s is undone already: %w", thread, turn, ErrNothing)
		}
		switch e.Kind {
		case KindExec:
			r.Untracked = true
		case KindFile:
			files = append(files, e)
		}
	}
	if len(files) == 0 {
		if r.Untracked {
			return nil, fmt.Errorf("thread %s: turn %s changed files only through commands (exec), which undo cannot see: %w", thread, turn, ErrNothing)
		}
		return nil, fmt.Errorf("thread %s: turn %s: %w: it changed no files through the file tools", thread, turn, ErrNothing)
	}
	var conflicts []Conflict
	changed := map[string]bool{}
	same := map[string]bool{} // as before the turn already: nothing to write
	for _, e := range files {
		if e.TooLarge {
			conflicts = append(conflicts, Conflict{Path: e.Path, Why: "its content before the turn was too large to keep, so it cannot be restored"})
			continue
		}
		now, err := hashOf(ws, e.Path)
		if err != nil {
			return nil, fmt.Errorf("undo: %s: %w", e.Path, err)
		}
		if e.Existed && now == hashBytes(e.Before) {
			// As it was before the turn (a write refused or that changed
			// nothing, or undone by hand): writing it again changes
			// nothing, or fails where the workspace never lets a file be
			// written (a journal kept before the tracker left those out).
			same[e.Path] = true
			continue
		}
		if now == e.After {
			continue
		}
		changed[e.Path] = true
		switch {
		case now == "":
			conflicts = append(conflicts, Conflict{Path: e.Path, Why: "removed after the turn"})
		case e.After == "":
			conflicts = append(conflicts, Conflict{Path: e.Path, Why: "created again after the turn"})
		default:
			conflicts = append(conflicts, Conflict{Path: e.Path, Why: "changed after the turn"})
		}
	}
	if len(conflicts) > 0 && !o.Force {
		return nil, &ConflictError{Turn: turn, Conflicts: conflicts}
	}
	var errs []error
	for _, e := range files {
		if e.TooLarge {
			r.Skipped = append(r.Skipped, e.Path)
			continue
		}
		if same[e.Path] {
			continue
		}
		if e.Existed {
			mode := iofs.FileMode(e.Mode)
			if mode == 0 {
				mode = 0o644
			}
			if err := ws.WriteFile(e.Path, e.Before, mode); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", e.Path, err))
				continue
			}
			r.Restored = append(r.Restored, e.Path)
		} else {
			if err := ws.Remove(e.Path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("%s: %w", e.Path, err))
				continue
			}
			r.Removed = append(r.Removed, e.Path)
		}
		if changed[e.Path] {
			r.Overwritten = append(r.Overwritten, e.Path)
		}
	}
	if len(errs) > 0 {
		// What was restored stays restored; the turn is not marked undone,
		// so the rest can be tried again.
		return r, fmt.Errorf("undo: turn %s: some files could not be restored (the others were): %w", turn, errors.Join(errs...))
	}
	slices.Sort(r.Skipped)
	if err := j.MarkUndone(ctx, thread, turn); err != nil {
		return r, fmt.Errorf("undo: turn %s restored but not marked undone: %w", turn, err)
	}
	return r, nil
}
