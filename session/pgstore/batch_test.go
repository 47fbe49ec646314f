package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func op(thread string, it llm.Item, fence int64) *recordOp {
	parts, _ := json.Marshal(it.Parts)
	return &recordOp{threadID: thread, it: it, parts: parts, fence: fence, done: make(chan error, 1)}
}

func text(turn, id, s string) llm.Item {
	it := llm.UserText(s)
	it.ID, it.TurnID, it.Origin = id, turn, llm.OriginDirective
	return it
}

// One batch carries the items of several turns: an item refused (its lease
// lost, its thread missing) gets its own error, the others commit, in
// order; a batch holding a placeholder's answer is written one by one and
// still commits everything.
func TestBatchRefusesItemsAlone(t *testing.T) {
	url := servicetest.Postgres(t)
	ctx := context.Background()
	s, err := Open(ctx, Config{URL: url, Node: "a", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, th := range []string{"one", "two"} {
		if err := s.SaveThread(ctx, session.Thread{ID: th}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimTurn(ctx, session.Turn{ID: th + ".t", ThreadID: th, Status: session.TurnInProgress}); err != nil {
			t.Fatal(err)
		}
	}
	batch := []*recordOp{
		op("one", text("one.t", "one.t.1", "first"), s.fence("one.t")),
		op("two", text("two.t", "two.t.1", "stale"), s.fence("two.t")+1000), // a lease this node lost
		op("missing", text("x", "x.1", "nowhere"), 0),
		op("one", text("one.t", "one.t.2", "second"), s.fence("one.t")),
	}
	s.commitBatch(batch)
	var errs []error
	for _, o := range batch {
		errs = append(errs, <-o.done)
	}
	if errs[0] != nil || errs[3] != nil {
		t.Errorf("the good items: %v, %v", errs[0], errs[3])
	}
	if !errors.Is(errs[1], ErrLeaseLost) {
		t.Errorf("the item under a lost lease: %v, want ErrLeaseLost", errs[1])
	}
	if !errors.Is(errs[2], session.ErrThreadNotFound) {
		t.Errorf("the item of a missing thread: %v, want ErrThreadNotFound", errs[2])
	}
	snap, err := s.LoadThread(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range snap.Items {
		ids = append(ids, it.ID)
	}
	if !slices.Equal(ids, []string{"one.t.1", "one.t.2"}) {
		t.Errorf("thread one holds %v", ids)
	}
	if snap, _ := s.LoadThread(ctx, "two"); len(snap.Items) != 0 {
		t.Errorf("the refused item was written: %+v", snap.Items)
	}

	// A placeholder and, in a later batch, its answer beside a new item.
	call := llm.Item{ID: "one.t.3", TurnID: "one.t", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "c", Name: "ask_user"}}}}
	pending := llm.ToolResult(llm.Result{CallID: "c", Name: "ask_user", Content: "waiting", Status: llm.ResultPending})
	pending.ID, pending.TurnID = "one.t.4", "one.t"
	answer := pending
	answer.Parts = []llm.Part{{Kind: llm.PartResult, Result: &llm.Result{CallID: "c", Name: "ask_user", Content: "yes", Status: llm.ResultOK}}}
	f := s.fence("one.t")
	first := []*recordOp{op("one", call, f), op("one", pending, f)}
	s.commitBatch(first)
	second := []*recordOp{op("one", answer, f), op("one", text("one.t", "one.t.5", "after"), f)}
	s.commitBatch(second)
	for _, o := range append(first, second...) {
		if err := <-o.done; err != nil {
			t.Fatalf("%s: %v", o.it.ID, err)
		}
	}
	snap, err = s.LoadThread(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, it := range snap.Items {
		ids = append(ids, it.ID)
	}
	if !slices.Equal(ids, []string{"one.t.1", "one.t.2", "one.t.3", "one.t.4", "one.t.5"}) || snap.Items[3].Result().Content != "yes" {
		t.Errorf("thread one holds %v, the placeholder reads %+v", ids, snap.Items[3].Result())
	}
}

// newTurns opens a store holding a running turn "NAME.t" on each thread
// named.
func newTurns(t *testing.T, names ...string) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Config{URL: servicetest.Postgres(t), Node: "a", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, th := range names {
		if err := s.SaveThread(ctx, session.Thread{ID: th}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimTurn(ctx, session.Turn{ID: th + ".t", ThreadID: th, Status: session.TurnInProgress}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// itemIDs returns the ids of the thread's history, in order.
func itemIDs(t *testing.T, s *Store, thread string) []string {
	t.Helper()
	snap, err := s.LoadThread(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range snap.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// One batch carries the items of many turns: the writer whose lease
// was lost is refused item by item, every other writer's items commit, in
// their order.
func TestABatchRefusesAFencedWriterAndCommitsTheOthers(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("th%d", i))
	}
	s := newTurns(t, names...)
	stale := "th5"
	var batch []*recordOp
	for k := range 3 {
		for _, th := range names {
			f := s.fence(th + ".t")
			if th == stale {
				f += 1000 // a lease this node lost
			}
			batch = append(batch, op(th, text(th+".t", fmt.Sprintf("%s.t.%d", th, k), "x"), f))
		}
	}
	s.commitBatch(batch)
	for _, o := range batch {
		err := <-o.done
		switch {
		case o.threadID == stale && !errors.Is(err, ErrLeaseLost):
			t.Errorf("%s under a lost lease: %v, want ErrLeaseLost", o.it.ID, err)
		case o.threadID != stale && err != nil:
			t.Errorf("%s beside a fenced writer: %v", o.it.ID, err)
		}
	}
	for _, th := range names {
		want := []string{th + ".t.0", th + ".t.1", th + ".t.2"}
		if th == stale {
			want = nil
		}
		if got := itemIDs(t, s, th); !slices.Equal(got, want) {
			t.Errorf("thread %s holds %v, want %v", th, got, want)
		}
	}
}

// A batch that fails mid-way (an item recorded before, not a
// placeholder) writes nothing; its items are then written one by one: the
// bad one refused, the others committed once, in order.
func TestABatchFailingMidwayCommitsTheRestOnce(t *testing.T) {
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("th%d", i))
	}
	s := newTurns(t, names...)
	ctx := context.Background()
	if err := s.Record(ctx, "th0", text("th0.t", "th0.t.dup", "first")); err != nil {
		t.Fatal(err)
	}
	var batch []*recordOp
	for k := range 2 {
		for _, th := range names {
			batch = append(batch, op(th, text(th+".t", fmt.Sprintf("%s.t.%d", th, k), "x"), s.fence(th+".t")))
			if th == "th0" && k == 0 {
				batch = append(batch, op(th, text(th+".t", "th0.t.dup", "again"), s.fence(th+".t")))
			}
		}
	}
	s.commitBatch(batch)
	for _, o := range batch {
		err := <-o.done
		if o.it.ID == "th0.t.dup" {
			if err == nil {
				t.Error("an item recorded before was written again")
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", o.it.ID, err)
		}
	}
	for _, th := range names {
		want := []string{th + ".t.0", th + ".t.1"}
		if th == "th0" {
			want = []string{"th0.t.dup", "th0.t.0", "th0.t.1"}
		}
		if got := itemIDs(t, s, th); !slices.Equal(got, want) {
			t.Errorf("thread %s holds %v, want %v", th, got, want)
		}
	}
}

// A writer whose context ends while its item waits for a writer (each
// is held up by a locked thread) returns at once with the context's error,
// and the item is never written; the writers go on with the others.
func TestRecordCancelledWhileWaitingIsNotWritten(t *testing.T) {
	var busy []string
	for i := range writers {
		busy = append(busy, fmt.Sprintf("busy%d", i))
	}
	s := newTurns(t, append(busy, "other")...)
	ctx := context.Background()
	// Another transaction holds the busy threads' rows.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, th := range busy {
		if _, err := lockThread(ctx, tx, th); err != nil {
			t.Fatal(err)
		}
	}
	// One item per writer, each taken before the next is queued: every
	// writer waits in a batch.
	var held []*recordOp
	for _, th := range busy {
		o := op(th, text(th+".t", th+".t.1", "held up"), s.fence(th+".t"))
		held = append(held, o)
		s.ops <- o
		for deadline := time.Now().Add(10 * time.Second); o.state.Load() != opTaken; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no writer took %s", o.it.ID)
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Record(cctx, "other", text("other.t", "other.t.1", "given up"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a record whose context ended while it waited: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the cancelled record returned after %v", d)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range held {
		if err := <-o.done; err != nil {
			t.Fatalf("the held-up %s: %v", o.it.ID, err)
		}
	}
	if err := s.Record(ctx, "other", text("other.t", "other.t.2", "after")); err != nil {
		t.Fatal(err)
	}
	if got := itemIDs(t, s, "other"); !slices.Equal(got, []string{"other.t.2"}) {
		t.Errorf("thread other holds %v, want only the item written after the cancelled one", got)
	}
}
