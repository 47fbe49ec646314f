package web_test

import (
	"context"
	"slices"
	"sync"

	"github.com/reinhq/rein/undo"
)

// journal is undo.Journal in memory: the rig's turns keep their
// before-images here, as rein serve's do in its store.
type journal struct {
	mu      sync.Mutex
	entries []undo.Entry
}

func (j *journal) AddUndo(_ context.Context, e undo.Entry) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, x := range j.entries {
		if x.Thread == e.Thread && x.Turn == e.Turn && x.Kind == e.Kind && x.Path == e.Path {
			return false, nil
		}
	}
	e.Before = slices.Clone(e.Before)
	j.entries = append(j.entries, e)
	return true, nil
}

func (j *journal) SetUndoAfter(_ context.Context, thread, turn, path, hash string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, x := range j.entries {
		if x.Thread == thread && x.Turn == turn && x.Kind == undo.KindFile && x.Path == path {
			j.entries[i].After = hash
		}
	}
	return nil
}

func (j *journal) UndoEntries(_ context.Context, thread, turn string) ([]undo.Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []undo.Entry
	for _, x := range j.entries {
		if x.Thread == thread && x.Turn == turn {
			out = append(out, x)
		}
	}
	return out, nil
}

func (j *journal) UndoTurns(_ context.Context, thread string) ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for i := len(j.entries) - 1; i >= 0; i-- {
		x := j.entries[i]
		if x.Thread == thread && !x.Undone && !slices.Contains(out, x.Turn) {
			out = append(out, x.Turn)
		}
	}
	return out, nil
}

func (j *journal) MarkUndone(_ context.Context, thread, turn string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, x := range j.entries {
		if x.Thread == thread && x.Turn == turn {
			j.entries[i].Undone = true
		}
	}
	return nil
}

func (j *journal) UndoSize(_ context.Context, thread, turn string) (int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var n int64
	for _, x := range j.entries {
		if x.Thread == thread && x.Turn == turn {
			n += int64(len(x.Before))
		}
	}
	return n, nil
}
