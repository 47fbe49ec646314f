package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reinhq/rein/undo"
)

// A file that keeps the tools' data of threads held elsewhere (PostgreSQL)
// stores a job and an undo entry of a thread it does not hold; a file
// that holds its threads refuses them, as its foreign keys did.
func TestJobsAndUndoOfThreadsElsewhere(t *testing.T) {
	ctx := context.Background()
	for _, elsewhere := range []bool{false, true} {
		s := openTemp(t)
		if elsewhere {
			s.ThreadsElsewhere()
		}
		_, jerr := s.AddJob(ctx, Job{Thread: "thread_pg", Message: "ping", Next: time.Now().Add(time.Hour)})
		_, uerr := s.AddUndo(ctx, undo.Entry{Thread: "thread_pg", Turn: "turn_1", Kind: undo.KindFile, Path: "a.txt"})
		if elsewhere && (jerr != nil || uerr != nil) {
			t.Errorf("threads elsewhere: job %v, undo %v; want both stored", jerr, uerr)
		}
		if !elsewhere && (!errors.Is(jerr, ErrNotFound) || !errors.Is(uerr, ErrNotFound)) {
			t.Errorf("threads here: job %v, undo %v; want both refused as not found", jerr, uerr)
		}
	}
}
