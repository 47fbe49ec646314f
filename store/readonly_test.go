package store

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
)

// refuseWrites makes every write of the store fail from now on, as a full
// disk or a read-only file does, until the returned func is called.
func refuseWrites(t *testing.T, s *Store) (restore func()) {
	t.Helper()
	set := func(on int) {
		if _, err := s.conn.ExecContext(context.Background(), `PRAGMA query_only = `+[]string{"0", "1"}[on]); err != nil {
			t.Fatal(err)
		}
	}
	set(1)
	return func() { set(0) }
}

// A thread with a cut turn loads from a store that cannot be written: the
// turn is closed in the snapshot exactly as the write would close it.
func TestLoadReadsAStoreThatCannotBeWritten(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	thread := newThread(t, s)
	tn := cutTurn(t, s, thread)
	liveAdd(tn) // steer needs the turn running here
	recordItems(t, s, thread, user(tn, tn+".1", "go"), assistant(tn, tn+".2", "", call("a"), call("b")),
		result(tn, tn+".3", "a", "done", llm.ResultOK))
	if _, err := s.AddSteer(ctx, tn, withID(llm.UserText("also this"), tn, "steer_1")); err != nil {
		t.Fatal(err)
	}
	liveDel(tn)

	restore := refuseWrites(t, s)
	if err := s.Normalize(ctx, thread); err == nil {
		t.Fatal("Normalize wrote to a store that refuses writes; the test cannot tell anything")
	}
	inMemory, err := s.Load(ctx, thread)
	if err != nil {
		t.Fatalf("Load of a store that cannot be written: %v", err)
	}
	if err := llm.CheckHistory(inMemory.Items); err != nil {
		t.Errorf("history loaded read-only: %v", err)
	}
	if got := inMemory.Last().Status; got != loop.StatusInterrupted {
		t.Errorf("cut turn loaded read-only is %s, want interrupted", got)
	}
	restore()

	stored, err := s.Load(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(inMemory.Items, stored.Items) {
		t.Errorf("closed in memory:\n%+v\nclosed in the store:\n%+v", inMemory.Items, stored.Items)
	}
	if a, b := inMemory.Last(), stored.Last(); a.Status != b.Status || a.StopReason != b.StopReason || a.Error != b.Error {
		t.Errorf("turn closed in memory %s/%s/%q, in the store %s/%s/%q", a.Status, a.StopReason, a.Error, b.Status, b.StopReason, b.Error)
	}
}

// A turn whose end cannot be written (disk full) is not later passed off as
// one cut by a crash, nor as completed: it failed, with the write error.
func TestAnEndNotRecordedSaysSo(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		end  func(s *Store, thread, turn string) error
	}{
		{"FinishTurn", func(s *Store, _, turn string) error { return s.finishOutcome(ctx, finished(turn)) }},
		{"SaveTurn", func(s *Store, thread, turn string) error {
			return s.SaveTurn(ctx, record.Turn{ID: turn, ThreadID: thread, Status: loop.StatusCompleted, StopReason: loop.StopFinished, Answer: "ok"})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			thread := newThread(t, s)
			tn, err := s.startTurn(ctx, thread, "")
			if err != nil {
				t.Fatal(err)
			}
			recordItems(t, s, thread, user(tn.ID, tn.ID+".1", "go"), assistant(tn.ID, tn.ID+".2", "ok"))
			restore := refuseWrites(t, s)
			werr := tt.end(s, thread, tn.ID)
			if werr == nil {
				t.Fatal("the end of the turn was written to a store that refuses writes")
			}
			check := func(when string) {
				snap, err := s.Load(ctx, thread)
				if err != nil {
					t.Fatalf("%s: load: %v", when, err)
				}
				last := snap.Last()
				if last.Status != loop.StatusFailed || last.StopReason != StopStoreError {
					t.Errorf("%s: the turn is %s (%s), want failed (%s)", when, last.Status, last.StopReason, StopStoreError)
				}
				if !strings.Contains(last.Error, "could not be recorded") || !strings.Contains(last.Error, "readonly") {
					t.Errorf("%s: the turn's error %q does not say its end was not recorded and why", when, last.Error)
				}
				if err := llm.CheckHistory(snap.Items); err != nil {
					t.Errorf("%s: %v", when, err)
				}
			}
			check("read-only")
			restore()
			check("written")
			if _, err := s.startTurn(ctx, thread, ""); err != nil {
				t.Fatalf("the thread goes on once the store can be written: %v", err)
			}
		})
	}
}

// A turn whose end could not be written is recorded as failed, with the
// write error, when the process closes its store once writes work again:
// no later load in another process calls it a crash.
func TestCloseRecordsAnEndNotRecordedBefore(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/rein.db"
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	thread := newThread(t, s)
	tn, err := s.startTurn(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	restore := refuseWrites(t, s)
	if err := s.finishOutcome(ctx, finished(tn.ID)); err == nil {
		t.Fatal("the end was written to a store that refuses writes")
	}
	restore()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	turns, err := other.Turns(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if got := turns[0]; got.Status != loop.StatusFailed || got.StopReason != StopStoreError {
		t.Errorf("stored turn %s (%s) %q, want failed (%s)", got.Status, got.StopReason, got.Error, StopStoreError)
	}
}

// A database opened to read only (its file system cannot be written) loads
// its threads, a cut turn closed in the snapshot, and refuses every write
// with ErrReadOnly.
func TestReadOnlyStoreReadsAndRefusesWrites(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/rein.db"
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	thread := newThread(t, s)
	tn := cutTurn(t, s, thread)
	recordItems(t, s, thread, user(tn, tn+".1", "go"), assistant(tn, tn+".2", "", call("a")))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := openReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !ro.ReadOnly() {
		t.Error("ReadOnly() is false")
	}
	snap, err := ro.Load(ctx, thread)
	if err != nil {
		t.Fatalf("load from a read-only store: %v", err)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Error(err)
	}
	if got := snap.Last().Status; got != loop.StatusInterrupted {
		t.Errorf("cut turn read from a read-only store: %s, want interrupted", got)
	}
	if _, err := ro.startTurn(ctx, thread, ""); !errors.Is(err, ErrReadOnly) {
		t.Errorf("StartTurn on a read-only store: %v, want ErrReadOnly", err)
	}
	if err := ro.Record(ctx, thread, user(tn, "x", "y")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Record on a read-only store: %v, want ErrReadOnly", err)
	}
}
