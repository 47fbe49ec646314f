package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

func newThread(t *testing.T, s *pgstore.Store, id string) {
	t.Helper()
	if err := s.SaveThread(t.Context(), session.Thread{ID: id}); err != nil {
		t.Fatal(err)
	}
}

func claimTurn(t *testing.T, s *pgstore.Store, thread, turn string) {
	t.Helper()
	if _, err := s.ClaimTurn(t.Context(), session.Turn{ID: turn, ThreadID: thread, Status: session.TurnInProgress}); err != nil {
		t.Fatalf("claim %s: %v", turn, err)
	}
}

func rec(t *testing.T, s *pgstore.Store, thread string, items ...llm.Item) {
	t.Helper()
	for _, it := range items {
		if err := s.Record(t.Context(), thread, it); err != nil {
			t.Fatalf("record %s: %v", it.ID, err)
		}
	}
}

func item(it llm.Item, turn, id string) llm.Item {
	it.ID, it.TurnID = id, turn
	return it
}

func calls(turn, id string, cs ...llm.Call) llm.Item {
	it := llm.Item{ID: id, TurnID: turn, Role: llm.RoleAssistant}
	for i := range cs {
		it.Parts = append(it.Parts, llm.Part{Kind: llm.PartCall, Call: &cs[i]})
	}
	return it
}

func ok(turn, id, call, content string) llm.Item {
	return item(llm.ToolResult(llm.Result{CallID: call, Name: "t", Content: content, Status: llm.ResultOK}), turn, id)
}

func readOnly(name string) bool { return name == "read_file" || name == "grep" }

// A node whose lease expired and was taken over cannot commit: its late
// item and its turn's end are refused with a *LeaseLostError and leave no
// trace, while the node that took the turn writes on.
func TestFencedLateWriteRefused(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	rec(t, a, "th", item(llm.UserText("go"), "turn", "turn.1"))
	expire(t, url, "turn")
	taken, err := b.Acquire(t.Context(), 10, readOnly)
	if err != nil || len(taken) != 1 || taken[0].Turn.ID != "turn" || !taken[0].Lost {
		t.Fatalf("b took %+v, %v; want the turn whose lease expired", taken, err)
	}

	late := item(llm.UserText("late"), "turn", "turn.2")
	late.Role = llm.RoleAssistant
	err = a.Record(t.Context(), "th", late)
	var lost *pgstore.LeaseLostError
	if !errors.As(err, &lost) || !errors.Is(err, pgstore.ErrLeaseLost) || lost.Node != "b" {
		t.Fatalf("a's late item: %v, want a *LeaseLostError naming node b", err)
	}
	err = a.SaveTurn(t.Context(), session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnCompleted, Answer: "a's end", Ended: time.Now()})
	if !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Fatalf("a's end of the turn: %v, want ErrLeaseLost", err)
	}

	rec(t, b, "th", item(llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "b goes on"}}}, "turn", "turn.2"))
	if err := b.SaveTurn(t.Context(), session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnCompleted, Answer: "b's end", Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Once the turn ended, a's write is still refused: the lease it held
	// is gone for good.
	if err := a.Record(t.Context(), "th", item(llm.UserText("later still"), "turn", "turn.9")); !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Errorf("a's write after b ended the turn: %v, want ErrLeaseLost", err)
	}
	snap, err := b.LoadThread(t.Context(), "th")
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Items; len(got) != 2 || got[1].Text() != "b goes on" {
		t.Errorf("history = %+v, want the input and b's item only", got)
	}
	if tu := snap.Turns[0]; tu.Answer != "b's end" || tu.Status != session.TurnCompleted {
		t.Errorf("the turn reads %+v, want b's end", tu)
	}
}

// Nodes acquiring at once never take the same turn: every queued turn is
// taken exactly once, and of two nodes racing for one expired lease one
// wins.
func TestTwoClaimersOneWinner(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	const threads = 24
	want := make([]string, 0, threads)
	for i := range threads {
		th, turn := "th"+string(rune('A'+i)), "q"+string(rune('A'+i))
		newThread(t, a, th)
		if err := a.SaveTurn(t.Context(), session.Turn{ID: turn, ThreadID: th, Status: session.TurnQueued, Input: []llm.Item{item(llm.UserText("hi"), turn, turn+".in")}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, turn)
	}
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	for _, s := range []*pgstore.Store{a, b} {
		wg.Go(func() {
			// An Acquire may come back empty while work is left: the
			// threads it locked were taken by the other node meanwhile.
			// A node polls; here, until all are taken or it is clear
			// nothing more will be.
			for range 500 {
				if total() >= threads {
					return
				}
				taken, err := s.Acquire(context.Background(), 3, readOnly)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, tk := range taken {
					got = append(got, tk.Turn.ID)
					if len(tk.Turn.Input) != 1 || tk.Turn.Input[0].Text() != "hi" || tk.Lost {
						t.Errorf("queued turn taken as %+v", tk)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("taken %v, want each of %v exactly once", got, want)
	}
	if a.Running()+b.Running() != threads {
		t.Errorf("the nodes hold %d+%d leases, want %d", a.Running(), b.Running(), threads)
	}

	// One expired lease, two nodes: one takes it.
	c := open(t, url, pgstore.Config{Node: "c", Lease: time.Minute})
	newThread(t, c, "lone")
	claimTurn(t, c, "lone", "lone.turn")
	expire(t, url, "lone.turn")
	var wins sync.WaitGroup
	results := make([][]pgstore.Taken, 2)
	for i, s := range []*pgstore.Store{a, b} {
		wins.Go(func() {
			var err error
			results[i], err = s.Acquire(context.Background(), 5, readOnly)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wins.Wait()
	if n := len(results[0]) + len(results[1]); n != 1 {
		t.Errorf("the expired turn was taken %d times: %+v", n, results)
	}
}

// A turn whose node was lost goes on elsewhere from its last committed
// item: the round already answered stays, the read-only call in flight is
// handed over to run again, the other is answered "aborted: node lost",
// and the steer accepted before the loss is handed over unread.
func TestExpiredLeaseTakenOver(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	rec(t, a, "th",
		item(llm.UserText("fix it"), "turn", "turn.1"),
		calls("turn", "turn.2", llm.Call{ID: "c1", Name: "read_file"}),
		ok("turn", "turn.3", "c1", "contents"),
		calls("turn", "turn.4", llm.Call{ID: "c2", Name: "grep"}, llm.Call{ID: "c3", Name: "exec"}),
	)
	steer := item(llm.UserText("and the tests"), "turn", "steer_1")
	steer.Origin = llm.OriginSteer
	if err := a.AddSteer(t.Context(), "th", "turn", steer); err != nil {
		t.Fatal(err)
	}
	// The lease is live: nothing to take.
	if taken, err := b.Acquire(t.Context(), 5, readOnly); err != nil || len(taken) != 0 {
		t.Fatalf("b took %+v, %v from a live lease", taken, err)
	}
	expire(t, url, "turn")
	taken, err := b.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 {
		t.Fatalf("b took %+v, %v; want the expired turn", taken, err)
	}
	tk := taken[0]
	if !tk.Lost || tk.Turn.ID != "turn" || tk.Turn.Status != session.TurnInProgress {
		t.Errorf("taken %+v", tk.Turn)
	}
	if len(tk.Rerun) != 1 || tk.Rerun[0].ID != "c2" {
		t.Errorf("calls to run again = %+v, want the read-only grep c2", tk.Rerun)
	}
	if len(tk.Steers) != 1 || tk.Steers[0].ID != "steer_1" {
		t.Errorf("steers handed over = %+v", tk.Steers)
	}
	var ids []string
	var c3 *llm.Result
	for _, it := range tk.Items {
		ids = append(ids, it.ID)
		if r := it.Result(); r != nil && r.CallID == "c3" {
			c3 = r
		}
	}
	if !slices.Equal(ids[:4], []string{"turn.1", "turn.2", "turn.3", "turn.4"}) || len(ids) != 5 {
		t.Errorf("history handed over = %v, want the committed items then c3's answer", ids)
	}
	if c3 == nil || c3.Status != llm.ResultAborted || c3.Content == "" {
		t.Errorf("the non-read-only call in flight is answered %+v, want aborted: node lost", c3)
	}
	// The new node runs the read-only call again and goes on.
	rec(t, b, "th", ok("turn", "turn.5", "c2", "matches"), steer,
		item(llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "done"}}}, "turn", "turn.6"))
	if err := b.SaveTurn(t.Context(), session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnCompleted, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	snap, err := a.LoadThread(t.Context(), "th")
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("history after the takeover: %v", err)
	}
	if len(snap.Steers) != 0 {
		t.Errorf("the steer is pending again: %+v", snap.Steers)
	}
}

// A node at its concurrency limit takes no turn; once one of its turns
// ends it takes the next.
func TestNodeAtItsLimitTakesNone(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute, MaxRunning: 1})
	newThread(t, a, "busy")
	claimTurn(t, a, "busy", "running")
	newThread(t, a, "waiting")
	if err := a.SaveTurn(t.Context(), session.Turn{ID: "queued", ThreadID: "waiting", Status: session.TurnQueued}); err != nil {
		t.Fatal(err)
	}
	if taken, err := a.Acquire(t.Context(), 5, nil); err != nil || len(taken) != 0 {
		t.Fatalf("a node at its limit took %+v, %v", taken, err)
	}
	if err := a.SaveTurn(t.Context(), session.Turn{ID: "running", ThreadID: "busy", Status: session.TurnCompleted, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	taken, err := a.Acquire(t.Context(), 5, nil)
	if err != nil || len(taken) != 1 || taken[0].Turn.ID != "queued" {
		t.Fatalf("with room again the node took %+v, %v; want the queued turn", taken, err)
	}
}

// A queued turn behind a running or paused turn of its thread is not
// taken.
func TestQueuedBehindARunningTurnNotTaken(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "first")
	if err := a.SaveTurn(t.Context(), session.Turn{ID: "second", ThreadID: "th", Status: session.TurnQueued}); err != nil {
		t.Fatal(err)
	}
	if taken, err := b.Acquire(t.Context(), 5, nil); err != nil || len(taken) != 0 {
		t.Fatalf("b took %+v, %v while the thread runs a turn", taken, err)
	}
}

// A turn holds at most 256 steered inputs it has not read: more are
// refused (a client cannot fill the database through a turn whose round
// runs long), and once the turn reads them steering is accepted again.
func TestSteersUnreadAreBounded(t *testing.T) {
	url := servicetest.Postgres(t)
	s := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	newThread(t, s, "th")
	claimTurn(t, s, "th", "turn")
	for i := range 256 {
		if err := s.AddSteer(t.Context(), "th", "turn", llm.Item{ID: fmt.Sprintf("s%d", i), Parts: llm.UserText("x").Parts}); err != nil {
			t.Fatalf("steer %d: %v", i, err)
		}
	}
	if err := s.AddSteer(t.Context(), "th", "turn", llm.Item{ID: "one-too-many", Parts: llm.UserText("x").Parts}); !errors.Is(err, pgstore.ErrTooManySteers) {
		t.Fatalf("the 257th unread steer: %v, want ErrTooManySteers", err)
	}
	p, err := s.Pending(t.Context(), "th", "turn")
	if err != nil || len(p.Steers) != 256 || p.Interrupt {
		t.Fatalf("pending: %d steers, interrupt %v, %v; want the 256, no interrupt", len(p.Steers), p.Interrupt, err)
	}
	it := p.Steers[0]
	rec(t, s, "th", it)
	if err := s.AddSteer(t.Context(), "th", "turn", llm.Item{ID: "room-again", Parts: llm.UserText("x").Parts}); err != nil {
		t.Fatalf("a steer once the turn read one: %v", err)
	}
}

// An interrupt asked on any node is seen by the node running the turn,
// for the lease it was asked under only; a queued turn ends at once.
func TestRequestInterrupt(t *testing.T) {
	url := servicetest.Postgres(t)
	s := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	other := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, s, "th")
	claimTurn(t, s, "th", "turn")
	if err := other.SaveTurn(t.Context(), session.Turn{ID: "queued", ThreadID: "th", Status: session.TurnQueued}); err != nil {
		t.Fatal(err)
	}
	if st, err := other.RequestInterrupt(t.Context(), "th", "turn"); err != nil || st != session.TurnInProgress {
		t.Fatalf("interrupt of the running turn: %s, %v", st, err)
	}
	if p, err := s.Pending(t.Context(), "th", "turn"); err != nil || !p.Interrupt {
		t.Fatalf("the running node's pending: %+v, %v; want the interrupt", p, err)
	}
	if st, err := other.RequestInterrupt(t.Context(), "th", "queued"); err != nil || st != session.TurnQueued {
		t.Fatalf("interrupt of the queued turn: %s, %v", st, err)
	}
	if q, err := s.QueuedTurns(t.Context(), "th"); err != nil || len(q) != 0 {
		t.Fatalf("queued turns after the interrupt: %v, %v; want none", q, err)
	}
	// The turn paused, then claimed again: the old interrupt is not its.
	if err := s.SaveTurn(t.Context(), session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnPaused, Pause: &record.Pause{}, State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	claimTurn(t, s, "th", "turn")
	if p, err := s.Pending(t.Context(), "th", "turn"); err != nil || p.Interrupt {
		t.Fatalf("pending under a new lease: %+v, %v; want no interrupt", p, err)
	}
}

// A steer is stored only for a running turn of the thread named, and a
// refused one leaves nothing behind: each refusal says why.
func TestSteerRefusalsStoreNothing(t *testing.T) {
	url := servicetest.Postgres(t)
	s := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	newThread(t, s, "th")
	newThread(t, s, "other")
	claimTurn(t, s, "th", "ended")
	if err := s.SaveTurn(t.Context(), session.Turn{ID: "ended", ThreadID: "th", Status: session.TurnCompleted, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	claimTurn(t, s, "th", "running")
	for _, c := range []struct {
		name, thread, turn string
		want               error // nil: any error
	}{
		{"no such thread", "missing", "running", session.ErrThreadNotFound},
		{"no such turn", "th", "missing", nil},
		{"another thread's turn", "other", "running", nil},
		{"an ended turn", "th", "ended", pgstore.ErrTurnNotRunning},
	} {
		err := s.AddSteer(t.Context(), c.thread, c.turn, llm.Item{ID: "steer-" + c.turn + "-" + c.thread, Parts: llm.UserText("x").Parts})
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	for _, turn := range []string{"running", "ended"} {
		if p, err := s.Pending(t.Context(), "th", turn); err != nil || len(p.Steers) != 0 {
			t.Errorf("turn %s holds %d steers (%v) after refusals only", turn, len(p.Steers), err)
		}
	}
	if err := s.AddSteer(t.Context(), "th", "running", llm.Item{ID: "accepted", Parts: llm.UserText("x").Parts}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Pending(t.Context(), "th", "running"); err != nil || len(p.Steers) != 1 || p.Steers[0].ID != "accepted" {
		t.Errorf("after one accepted steer: %+v, %v", p.Steers, err)
	}
}
