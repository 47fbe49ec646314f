package pgstore

import (
	"context"
	"encoding/json"
	"errors"
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
