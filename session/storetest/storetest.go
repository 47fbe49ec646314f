// Package storetest is the conformance suite of session.Store: one set of
// tests that every implementation (the SQLite adapter, PostgreSQL, the
// in-memory store) passes, so the scheduler can rely on the same rules
// whichever store holds its threads. Call Run from a _test.go file with a
// Harness that opens the implementation under test.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

// DB is one fresh, empty database of the implementation under test.
type DB struct {
	// Handle opens another handle on the database: what one process (one
	// node) sees of it. Handles of one DB share every thread; the harness
	// closes them when the test ends.
	Handle func(t *testing.T) session.Store
	// Crash makes the runner of a running turn gone, as if its process
	// was killed or its node lost (a lease expired): the next load or
	// claim of the thread treats the turn as cut. Nil for a store with no
	// crash to survive (one in memory); the crash tests then skip.
	Crash func(t *testing.T, threadID, turnID string)
}

// Harness opens a fresh DB for one test.
type Harness func(t *testing.T) DB

// Run runs the whole suite against the implementation h opens.
func Run(t *testing.T, h Harness) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, db DB)
	}{
		{"ThreadsRoundTrip", testThreadsRoundTrip},
		{"MissingThread", testMissingThread},
		{"ListThreadsPages", testListThreadsPages},
		{"FindThreadsByOwnerAndTitle", testFindThreads},
		{"ItemsAppendInOrder", testItemsAppendInOrder},
		{"PlaceholderReplacedInPlace", testPlaceholderReplacedInPlace},
		{"NonPlaceholderNotReplaced", testNonPlaceholderNotReplaced},
		{"TurnsSavedAndNumbered", testTurnsSavedAndNumbered},
		{"StructuredAnswerKept", testStructuredAnswerKept},
		{"QueuedTurnKeepsItsOutputSchema", testQueuedTurnKeepsItsOutputSchema},
		{"PauseKeepsStateAndBlocksNewTurns", testPauseKeepsState},
		{"SteersPendingUntilRecorded", testSteersPendingUntilRecorded},
		{"ClaimOneRunningTurnPerThread", testClaimOneRunningTurn},
		{"ClaimEndedTurnRefused", testClaimEndedTurnRefused},
		{"ConcurrentClaimersOneWinner", testConcurrentClaimers},
		{"QueuedTurnClaimedAfterRunningEnds", testQueuedTurnClaimed},
		{"CrashNormalized", testCrashNormalized},
		{"CrashFreesTheThreadForAnotherHandle", testCrashFreesThread},
		{"ChildThreadsLinkedAndListedApart", testChildThreads},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Each test has a database of its own.
			t.Parallel()
			tt.fn(t, h(t))
		})
	}
}

// ctx is a test's context with a generous bound: a store on a loaded
// machine may be slow, never stuck.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

var seq struct {
	sync.Mutex
	n int
}

// id returns an id unique in the test binary.
func id(prefix string) string {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), seq.n)
}

func newThread(t *testing.T, s session.Store) string {
	t.Helper()
	now := time.Now()
	th := session.Thread{ID: id("thread"), Created: now, Updated: now, Settings: session.ThreadConfig{Workspace: "/w", Model: "scripted:x"}}
	if err := s.SaveThread(ctx(t), th); err != nil {
		t.Fatalf("SaveThread: %v", err)
	}
	return th.ID
}

func user(turn, itemID, text string) llm.Item {
	it := llm.UserText(text)
	it.ID, it.TurnID = itemID, turn
	return it
}

func assistant(turn, itemID string, calls ...llm.Call) llm.Item {
	it := llm.Item{ID: itemID, TurnID: turn, Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "working"}}}
	for i := range calls {
		it.Parts = append(it.Parts, llm.Part{Kind: llm.PartCall, Call: &calls[i]})
	}
	return it
}

func result(turn, itemID, callID, content string, status llm.ResultStatus) llm.Item {
	it := llm.ToolResult(llm.Result{CallID: callID, Name: "t", Content: content, Status: status})
	it.ID, it.TurnID = itemID, turn
	return it
}

func record1(t *testing.T, s session.Store, thread string, items ...llm.Item) {
	t.Helper()
	for _, it := range items {
		if err := s.Record(ctx(t), thread, it); err != nil {
			t.Fatalf("Record %s: %v", it.ID, err)
		}
	}
}

func load(t *testing.T, s session.Store, thread string) *session.Snapshot {
	t.Helper()
	snap, err := s.LoadThread(ctx(t), thread)
	if err != nil {
		t.Fatalf("LoadThread: %v", err)
	}
	return snap
}

func claim(t *testing.T, s session.Store, thread, turn string) session.Claim {
	t.Helper()
	c, err := s.ClaimTurn(ctx(t), session.Turn{ID: turn, ThreadID: thread, Status: session.TurnInProgress, Started: time.Now()})
	if err != nil {
		t.Fatalf("ClaimTurn %s: %v", turn, err)
	}
	return c
}

func end(t *testing.T, s session.Store, thread, turn string, status session.TurnStatus) {
	t.Helper()
	rec := session.Turn{ID: turn, ThreadID: thread, Status: status, StopReason: record.StopFinished, Answer: "done",
		Rounds: 2, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, Cost: 0.5, Started: time.Now(), Ended: time.Now()}
	if err := s.SaveTurn(ctx(t), rec); err != nil {
		t.Fatalf("SaveTurn %s %s: %v", turn, status, err)
	}
}

func ids(items []llm.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func turnOf(t *testing.T, snap *session.Snapshot, turn string) session.Turn {
	t.Helper()
	for _, tu := range snap.Turns {
		if tu.ID == turn {
			return tu
		}
	}
	t.Fatalf("thread %s has no turn %s (turns: %+v)", snap.Thread.ID, turn, snap.Turns)
	return session.Turn{}
}

func testThreadsRoundTrip(t *testing.T, db DB) {
	s := db.Handle(t)
	now := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	th := session.Thread{ID: id("thread"), Created: now, Updated: now, Settings: session.ThreadConfig{
		Workspace: "/work", Model: "openai:gpt", Instructions: "be brief", EnableTools: []string{"a"}, DisableTools: []string{"b"},
		Approval: "never", Sandbox: "read-only", MaxRounds: 7, Approved: []string{"exec"},
		ForceTools: []string{"c"}, KBs: []string{"docs", "notes"},
	}}
	if err := s.SaveThread(ctx(t), th); err != nil {
		t.Fatal(err)
	}
	got := load(t, s, th.ID).Thread
	if got.ID != th.ID || !got.Created.Equal(th.Created) {
		t.Errorf("loaded thread %s created %v, want %s created %v", got.ID, got.Created, th.ID, th.Created)
	}
	if fmt.Sprint(got.Settings) != fmt.Sprint(th.Settings) {
		t.Errorf("settings = %+v, want %+v", got.Settings, th.Settings)
	}
	// Saving again updates the settings and keeps when it was created.
	th.Settings.Approved = []string{"exec", "write_file"}
	th.Settings.Model = "anthropic:claude"
	if err := s.SaveThread(ctx(t), th); err != nil {
		t.Fatal(err)
	}
	got = load(t, db.Handle(t), th.ID).Thread
	if !slices.Equal(got.Settings.Approved, th.Settings.Approved) || got.Settings.Model != th.Settings.Model {
		t.Errorf("after a second save, settings = %+v, want %+v", got.Settings, th.Settings)
	}
	if !got.Created.Equal(th.Created) {
		t.Errorf("a second save moved Created to %v, want %v", got.Created, th.Created)
	}
}

func testMissingThread(t *testing.T, db DB) {
	s := db.Handle(t)
	if _, err := s.LoadThread(ctx(t), "thread_missing"); !errors.Is(err, session.ErrThreadNotFound) {
		t.Errorf("LoadThread of a missing thread: %v, want ErrThreadNotFound", err)
	}
	if err := s.Record(ctx(t), "thread_missing", user("turn_x", "i1", "hi")); !errors.Is(err, session.ErrThreadNotFound) {
		t.Errorf("Record into a missing thread: %v, want ErrThreadNotFound", err)
	}
	if _, err := s.ClaimTurn(ctx(t), session.Turn{ID: id("turn"), ThreadID: "thread_missing", Status: session.TurnInProgress}); !errors.Is(err, session.ErrThreadNotFound) {
		t.Errorf("ClaimTurn on a missing thread: %v, want ErrThreadNotFound", err)
	}
}

func testListThreadsPages(t *testing.T, db DB) {
	s := db.Handle(t)
	var want []string
	base := time.Now()
	for i := range 5 {
		th := session.Thread{ID: id("thread"), Created: base, Updated: base.Add(time.Duration(i) * time.Second)}
		if err := s.SaveThread(ctx(t), th); err != nil {
			t.Fatal(err)
		}
		// Saved one after another: the last saved is the most recent.
		want = slices.Insert(want, 0, th.ID)
		time.Sleep(2 * time.Millisecond) // distinct update times on coarse clocks
	}
	all, next, err := s.ListThreads(ctx(t), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(threadIDs(all), want) || next != "" {
		t.Fatalf("ListThreads(all) = %v next %q, want %v and no next page", threadIDs(all), next, want)
	}
	var paged []string
	cursor := ""
	for range 10 {
		page, n, err := s.ListThreads(ctx(t), 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 {
			t.Fatalf("a page of limit 2 holds %d threads", len(page))
		}
		paged = append(paged, threadIDs(page)...)
		if n == "" {
			break
		}
		cursor = n
	}
	if !slices.Equal(paged, want) {
		t.Errorf("pages of 2 = %v, want %v", paged, want)
	}
	if _, _, err := s.ListThreads(ctx(t), 2, "not a cursor"); err == nil {
		t.Error("a cursor no page returned was accepted")
	}
}

func threadIDs(ths []session.Thread) []string {
	out := make([]string, len(ths))
	for i, th := range ths {
		out[i] = th.ID
	}
	return out
}

func testItemsAppendInOrder(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	turn := id("turn")
	c := claim(t, s, th, turn)
	if c.Items != 0 {
		t.Errorf("claim on an empty thread reports %d items", c.Items)
	}
	items := []llm.Item{
		user(turn, turn+".1", "hello"),
		assistant(turn, turn+".2", llm.Call{ID: "call_1", Name: "t", Args: `{"a":1}`}),
		result(turn, turn+".3", "call_1", "ok", llm.ResultOK),
		assistant(turn, turn+".4"),
	}
	record1(t, s, th, items...)
	end(t, s, th, turn, session.TurnCompleted)
	snap := load(t, db.Handle(t), th)
	if !slices.Equal(ids(snap.Items), ids(items)) {
		t.Fatalf("items = %v, want %v", ids(snap.Items), ids(items))
	}
	if got := snap.Items[1].Calls(); len(got) != 1 || *got[0] != *items[1].Calls()[0] {
		t.Errorf("the call came back as %+v", got)
	}
	if r := snap.Items[2].Result(); r == nil || r.CallID != "call_1" || r.Content != "ok" || r.Status != llm.ResultOK {
		t.Errorf("the result came back as %+v", r)
	}
	if snap.Items[0].Text() != "hello" || snap.Items[0].TurnID != turn || snap.Items[0].Role != llm.RoleUser {
		t.Errorf("the input came back as %+v", snap.Items[0])
	}
	c = claim(t, s, th, id("turn"))
	if c.Items != len(items) {
		t.Errorf("a claim after %d items reports %d", len(items), c.Items)
	}
}

func testPlaceholderReplacedInPlace(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	turn := id("turn")
	claim(t, s, th, turn)
	record1(t, s, th,
		user(turn, turn+".1", "q"),
		assistant(turn, turn+".2", llm.Call{ID: "call_ask", Name: "ask_user"}),
		result(turn, turn+".3", "call_ask", "waiting", llm.ResultPending),
	)
	record1(t, s, th, result(turn, turn+".3", "call_ask", "the answer", llm.ResultOK), user(turn, turn+".4", "more"))
	snap := load(t, s, th)
	if want := []string{turn + ".1", turn + ".2", turn + ".3", turn + ".4"}; !slices.Equal(ids(snap.Items), want) {
		t.Fatalf("items = %v, want %v (the answer in the placeholder's place)", ids(snap.Items), want)
	}
	if r := snap.Items[2].Result(); r.Content != "the answer" || r.Status != llm.ResultOK {
		t.Errorf("the placeholder reads %+v, want the answer", r)
	}
}

func testNonPlaceholderNotReplaced(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	turn := id("turn")
	claim(t, s, th, turn)
	record1(t, s, th, user(turn, turn+".1", "original"))
	if err := s.Record(ctx(t), th, user(turn, turn+".1", "rewritten")); err == nil {
		t.Error("an item that is not a placeholder was recorded again; history is append-only")
	}
	if got := load(t, s, th).Items; len(got) != 1 || got[0].Text() != "original" {
		t.Errorf("history after the refused write = %+v", got)
	}
}

func testTurnsSavedAndNumbered(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	first, second, queued := id("turn"), id("turn"), id("turn")
	claim(t, s, th, first)
	in := user(queued, "input_1", "later")
	if err := s.SaveTurn(ctx(t), session.Turn{ID: queued, ThreadID: th, Status: session.TurnQueued, Input: []llm.Item{in}, Started: time.Now()}); err != nil {
		t.Fatalf("SaveTurn queued: %v", err)
	}
	end(t, s, th, first, session.TurnCompleted)
	claim(t, s, th, second)
	end(t, s, th, second, session.TurnFailed)
	snap := load(t, db.Handle(t), th)
	if len(snap.Turns) != 3 {
		t.Fatalf("turns = %+v, want 3", snap.Turns)
	}
	got := turnOf(t, snap, first)
	if got.Status != session.TurnCompleted || got.Answer != "done" || got.Rounds != 2 || got.Usage.InputTokens != 10 || got.Cost != 0.5 || got.Ended.IsZero() {
		t.Errorf("the completed turn reads %+v", got)
	}
	if got.Seq != 1 || turnOf(t, snap, queued).Seq != 2 || turnOf(t, snap, second).Seq != 3 {
		t.Errorf("turn numbers = %d %d %d, want 1 2 3 in the order they were stored", got.Seq, turnOf(t, snap, queued).Seq, turnOf(t, snap, second).Seq)
	}
	q := turnOf(t, snap, queued)
	if q.Status != session.TurnQueued || len(q.Input) != 1 || q.Input[0].Text() != "later" || q.Input[0].ID != "input_1" {
		t.Errorf("the queued turn reads %+v, want it queued with its input", q)
	}
	if snap.Thread.Turns != 3 {
		t.Errorf("the thread counts %d turns, want 3", snap.Thread.Turns)
	}
}

func testPauseKeepsState(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	turn := id("turn")
	claim(t, s, th, turn)
	record1(t, s, th,
		user(turn, turn+".1", "q"),
		assistant(turn, turn+".2", llm.Call{ID: "call_ask", Name: "ask_user"}),
		result(turn, turn+".3", "call_ask", "waiting", llm.ResultPending),
	)
	state := json.RawMessage(`{"turn_id":"` + turn + `","pause":{"turn_id":"` + turn + `","call_id":"call_ask","tool":"ask_user","kind":"questions"}}`)
	p := &record.Pause{ThreadID: th, TurnID: turn, CallID: "call_ask", Tool: "ask_user", Kind: "questions"}
	if err := s.SaveTurn(ctx(t), session.Turn{ID: turn, ThreadID: th, Status: session.TurnPaused, StopReason: record.StopAwaitingUser, Pause: p, State: state, Started: time.Now()}); err != nil {
		t.Fatalf("SaveTurn paused: %v", err)
	}
	snap := load(t, db.Handle(t), th)
	got := turnOf(t, snap, turn)
	if got.Status != session.TurnPaused || got.Pause == nil || got.Pause.CallID != "call_ask" {
		t.Fatalf("the paused turn reads %+v", got)
	}
	var a, b any
	if err := json.Unmarshal(got.State, &a); err != nil {
		t.Fatalf("the paused turn's state %q: %v", got.State, err)
	}
	json.Unmarshal(state, &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("state = %s, want %s", got.State, state)
	}
	// A new turn may not pass a turn waiting for the user.
	if _, err := db.Handle(t).ClaimTurn(ctx(t), session.Turn{ID: id("turn"), ThreadID: th, Status: session.TurnInProgress}); !errors.Is(err, session.ErrTurnPaused) {
		t.Errorf("a new turn claimed past a paused one: %v, want ErrTurnPaused", err)
	}
	// The answer resumes the same turn.
	claim(t, s, th, turn)
	record1(t, s, th, result(turn, turn+".3", "call_ask", "yes", llm.ResultOK))
	end(t, s, th, turn, session.TurnCompleted)
	snap = load(t, s, th)
	if got := turnOf(t, snap, turn); got.Status != session.TurnCompleted || len(got.State) != 0 || got.Pause != nil {
		t.Errorf("the answered turn reads %+v, want it completed without its pause", got)
	}
	claim(t, s, th, id("turn"))
}

func testSteersPendingUntilRecorded(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	turn := id("turn")
	claim(t, s, th, turn)
	record1(t, s, th, user(turn, turn+".1", "go"))
	read := user(turn, id("steer"), "also this")
	read.Origin = llm.OriginSteer
	unread := user(turn, id("steer"), "and that")
	unread.Origin = llm.OriginSteer
	for _, it := range []llm.Item{read, unread} {
		if err := s.AddSteer(ctx(t), th, turn, it); err != nil {
			t.Fatalf("AddSteer: %v", err)
		}
	}
	// A running turn's steers are its runner's to deliver.
	if snap := load(t, db.Handle(t), th); len(snap.Steers[turn]) != 0 {
		t.Errorf("steers of a running turn handed out on load: %+v", snap.Steers)
	}
	record1(t, s, th, read)
	end(t, s, th, turn, session.TurnCompleted)
	snap := load(t, db.Handle(t), th)
	if got := snap.Steers[turn]; len(got) != 1 || got[0].ID != unread.ID || got[0].Text() != "and that" {
		t.Errorf("pending steers of the ended turn = %+v, want only the one never recorded (%s)", got, unread.ID)
	}
}

func testClaimOneRunningTurn(t *testing.T, db DB) {
	a, b := db.Handle(t), db.Handle(t)
	th := newThread(t, a)
	running := id("turn")
	claim(t, a, th, running)
	for _, s := range []session.Store{a, b} {
		_, err := s.ClaimTurn(ctx(t), session.Turn{ID: id("turn"), ThreadID: th, Status: session.TurnInProgress})
		if !errors.Is(err, session.ErrTurnBusy) {
			t.Errorf("a second turn claimed while %s runs: %v, want ErrTurnBusy", running, err)
		}
	}
	// Another thread is free.
	claim(t, b, newThread(t, b), id("turn"))
	end(t, a, th, running, session.TurnCompleted)
	claim(t, b, th, id("turn"))
}

func testClaimEndedTurnRefused(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	turn := id("turn")
	claim(t, s, th, turn)
	end(t, s, th, turn, session.TurnCompleted)
	if _, err := s.ClaimTurn(ctx(t), session.Turn{ID: turn, ThreadID: th, Status: session.TurnInProgress}); err == nil {
		t.Error("a completed turn was claimed to run again")
	}
	if got := turnOf(t, load(t, s, th), turn); got.Status != session.TurnCompleted {
		t.Errorf("after the refused claim the turn is %s", got.Status)
	}
}

func testConcurrentClaimers(t *testing.T, db DB) {
	const n = 8
	handles := make([]session.Store, n)
	for i := range handles {
		handles[i] = db.Handle(t)
	}
	th := newThread(t, handles[0])
	var wg sync.WaitGroup
	errs := make([]error, n)
	turns := make([]string, n)
	start := make(chan struct{})
	for i := range n {
		turns[i] = id("turn")
		wg.Go(func() {
			<-start
			_, errs[i] = handles[i].ClaimTurn(ctx(t), session.Turn{ID: turns[i], ThreadID: th, Status: session.TurnInProgress, Started: time.Now()})
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, session.ErrTurnBusy):
			t.Errorf("claimer %d: %v, want success or ErrTurnBusy", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent claimers won, want exactly 1 (errors: %v)", winners, n, errs)
	}
	running := 0
	for _, tu := range load(t, handles[0], th).Turns {
		if tu.Status == session.TurnInProgress {
			running++
		}
	}
	if running != 1 {
		t.Errorf("the thread has %d running turns, want 1", running)
	}
}

func testQueuedTurnClaimed(t *testing.T, db DB) {
	a, b := db.Handle(t), db.Handle(t)
	th := newThread(t, a)
	first, next := id("turn"), id("turn")
	claim(t, a, th, first)
	in := user(next, "in_"+next, "queued input")
	if err := a.SaveTurn(ctx(t), session.Turn{ID: next, ThreadID: th, Status: session.TurnQueued, Input: []llm.Item{in}, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimTurn(ctx(t), session.Turn{ID: next, ThreadID: th, Status: session.TurnInProgress, Input: []llm.Item{in}}); !errors.Is(err, session.ErrTurnBusy) {
		t.Errorf("a queued turn claimed while another runs: %v, want ErrTurnBusy", err)
	}
	end(t, a, th, first, session.TurnCompleted)
	claim(t, b, th, next)
	if got := turnOf(t, load(t, a, th), next); got.Status != session.TurnInProgress {
		t.Errorf("the claimed queued turn is %s", got.Status)
	}
}

// cutThread runs a turn into a state a crash may leave: input, an
// assistant item whose call has no result, a placeholder, and a steer no
// one read; then its runner is lost.
func cutThread(t *testing.T, db DB, s session.Store) (th, turn string, steer llm.Item) {
	if db.Crash == nil {
		t.Skip("the store has no crash to survive")
	}
	th = newThread(t, s)
	turn = id("turn")
	claim(t, s, th, turn)
	steer = user(turn, id("steer"), "steered before the crash")
	steer.Origin = llm.OriginSteer
	record1(t, s, th,
		user(turn, turn+".1", "go"),
		assistant(turn, turn+".2", llm.Call{ID: "call_a", Name: "t"}, llm.Call{ID: "call_b", Name: "t"}),
		result(turn, turn+".3", "call_a", "done", llm.ResultOK),
	)
	if err := s.AddSteer(ctx(t), th, turn, steer); err != nil {
		t.Fatal(err)
	}
	db.Crash(t, th, turn)
	return th, turn, steer
}

func testCrashNormalized(t *testing.T, db DB) {
	s := db.Handle(t)
	th, turn, steer := cutThread(t, db, s)
	reader := db.Handle(t)
	snap := load(t, reader, th)
	got := turnOf(t, snap, turn)
	if !got.Status.Done() || got.Ended.IsZero() {
		t.Errorf("the cut turn is %s (ended %v), want it ended", got.Status, got.Ended)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("the normalized history breaks the invariants: %v", err)
	}
	var aborted *llm.Result
	for i := range snap.Items {
		if r := snap.Items[i].Result(); r != nil && r.CallID == "call_b" {
			aborted = r
		}
	}
	if aborted == nil || aborted.Status != llm.ResultAborted {
		t.Errorf("the call cut mid-flight is answered %+v, want aborted", aborted)
	}
	if !slices.ContainsFunc(snap.Items, func(it llm.Item) bool { return it.ID == steer.ID && it.Text() == steer.Text() }) {
		t.Errorf("the steer accepted before the crash is not in the history: %v", ids(snap.Items))
	}
	if last := snap.Items[len(snap.Items)-1]; last.Origin != llm.OriginMarker || last.TurnID != turn {
		t.Errorf("the history ends with %+v, want a marker of the cut turn", last)
	}
	if len(snap.Steers) != 0 {
		t.Errorf("steers handed out again after joining the history: %+v", snap.Steers)
	}
	// Normalizing twice changes nothing.
	again := load(t, db.Handle(t), th)
	if !slices.Equal(ids(again.Items), ids(snap.Items)) {
		t.Errorf("a second load changed the history: %v then %v", ids(snap.Items), ids(again.Items))
	}
}

func testCrashFreesThread(t *testing.T, db DB) {
	s := db.Handle(t)
	th, turn, _ := cutThread(t, db, s)
	other := db.Handle(t)
	next := id("turn")
	claim(t, other, th, next)
	snap := load(t, other, th)
	if got := turnOf(t, snap, turn); !got.Status.Done() {
		t.Errorf("the cut turn is %s after another claimed the thread", got.Status)
	}
	if got := turnOf(t, snap, next); got.Status != session.TurnInProgress {
		t.Errorf("the new turn is %s", got.Status)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("history after the takeover: %v", err)
	}
}

// testChildThreads: a sub-agent's thread keeps its link to the parent's
// turn and call, is left out of ListThreads, and is listed by the parent's
// ListChildren and by ListAllThreads.
func testChildThreads(t *testing.T, db DB) {
	s := db.Handle(t)
	tree, ok := s.(session.ThreadTree)
	if !ok {
		t.Fatalf("%T does not implement session.ThreadTree", s)
	}
	parent := newThread(t, s)
	now := time.Now()
	link := record.Link{ThreadID: parent, TurnID: id("turn"), CallID: "call_1"}
	child := session.Thread{ID: id("thread"), Title: "look it up", Created: now, Updated: now, Parent: link}
	if err := s.SaveThread(ctx(t), child); err != nil {
		t.Fatal(err)
	}
	// A second save without the link (settings only) keeps it.
	child2 := child
	child2.Parent = record.Link{}
	if err := s.SaveThread(ctx(t), child2); err != nil {
		t.Fatal(err)
	}
	record1(t, s, child.ID, user("turn_c", "c1", "find it"))
	got := load(t, db.Handle(t), child.ID)
	if got.Thread.Parent != link || len(got.Items) != 1 {
		t.Errorf("child loaded with link %+v and %d items, want %+v and 1", got.Thread.Parent, len(got.Items), link)
	}
	if p := load(t, s, parent).Thread.Parent; !p.IsZero() {
		t.Errorf("a top-level thread has the link %+v", p)
	}
	top, _, err := s.ListThreads(ctx(t), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(threadIDs(top), child.ID) || !slices.Contains(threadIDs(top), parent) {
		t.Errorf("ListThreads = %v, want the parent %s and not the child %s", threadIDs(top), parent, child.ID)
	}
	all, _, err := tree.ListAllThreads(ctx(t), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(threadIDs(all), child.ID) || !slices.Contains(threadIDs(all), parent) {
		t.Errorf("ListAllThreads = %v, want both %s and %s", threadIDs(all), parent, child.ID)
	}
	kids, err := tree.ListChildren(ctx(t), parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || kids[0].ID != child.ID || kids[0].Parent != link {
		t.Errorf("ListChildren = %+v, want the child with its link", kids)
	}
	if none, err := tree.ListChildren(ctx(t), child.ID); err != nil || len(none) != 0 {
		t.Errorf("ListChildren of a childless thread = %v, %v", none, err)
	}
}

// testStructuredAnswerKept: a turn's structured answer (Turn.Output) is
// read back as it was saved, for thread/read; a text turn has none.
func testStructuredAnswerKept(t *testing.T, db DB) {
	s := db.Handle(t)
	th := newThread(t, s)
	typed, plain := id("turn"), id("turn")
	claim(t, s, th, typed)
	const want = `{"name":"Ada","age":36}`
	rec := session.Turn{ID: typed, ThreadID: th, Status: session.TurnCompleted, StopReason: record.StopFinished, Answer: want,
		Output: json.RawMessage(want), Started: time.Now(), Ended: time.Now()}
	if err := s.SaveTurn(ctx(t), rec); err != nil {
		t.Fatalf("SaveTurn: %v", err)
	}
	claim(t, s, th, plain)
	end(t, s, th, plain, session.TurnCompleted)
	snap := load(t, db.Handle(t), th)
	if got := turnOf(t, snap, typed); string(got.Output) != want {
		t.Errorf("the typed turn's output reads %q, want %s", got.Output, want)
	}
	if got := turnOf(t, snap, plain); got.Output != nil {
		t.Errorf("the text turn's output reads %q, want none", got.Output)
	}
	// A thread's default output schema is a setting, kept with the others.
	now := time.Now()
	const schema = `{"type":"object","properties":{"city":{"type":"string"}}}`
	typedThread := session.Thread{ID: id("thread"), Created: now, Updated: now,
		Settings: session.ThreadConfig{Workspace: "/w", Model: "scripted:x", Output: json.RawMessage(schema)}}
	if err := s.SaveThread(ctx(t), typedThread); err != nil {
		t.Fatalf("SaveThread: %v", err)
	}
	if got := load(t, db.Handle(t), typedThread.ID).Thread.Settings.Output; string(got) != schema {
		t.Errorf("the thread's output schema reads %q, want %s", got, schema)
	}
}

// A turn's own output schema (StartOutput on a busy thread) is stored with
// the turn while it is queued, so that whichever handle (node, process
// after a restart) starts it asks for the same answer; it stays once the
// turn is claimed and ended by records that do not name it, and a text
// turn has none.
func testQueuedTurnKeepsItsOutputSchema(t *testing.T, db DB) {
	a, b := db.Handle(t), db.Handle(t)
	th := newThread(t, a)
	first, typed, plain := id("turn"), id("turn"), id("turn")
	claim(t, a, th, first)
	spec := &llm.Output{Name: "city", Description: "where to go", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`), Strict: true}
	for _, q := range []session.Turn{
		{ID: typed, ThreadID: th, Status: session.TurnQueued, Input: []llm.Item{user(typed, "in_"+typed, "where?")}, Started: time.Now(), OutputSpec: spec},
		{ID: plain, ThreadID: th, Status: session.TurnQueued, Input: []llm.Item{user(plain, "in_"+plain, "why?")}, Started: time.Now()},
	} {
		if err := a.SaveTurn(ctx(t), q); err != nil {
			t.Fatalf("SaveTurn %s: %v", q.ID, err)
		}
	}
	same := func(when string, got *llm.Output) {
		t.Helper()
		if got == nil {
			t.Fatalf("%s: the queued turn's output schema is gone", when)
		}
		if got.Name != spec.Name || got.Description != spec.Description || got.Strict != spec.Strict || !jsonEqual(got.Schema, spec.Schema) {
			t.Errorf("%s: the queued turn asks for %+v, want %+v", when, *got, *spec)
		}
	}
	snap := load(t, b, th)
	same("loaded by another handle", turnOf(t, snap, typed).OutputSpec)
	if got := turnOf(t, snap, plain).OutputSpec; got != nil {
		t.Errorf("the text turn asks for %+v, want nothing", *got)
	}
	end(t, a, th, first, session.TurnCompleted)
	// Claimed and ended by records that do not name it (the scheduler's
	// end of a turn it ran does; a sub-agent's record does not).
	claim(t, b, th, typed)
	same("claimed", turnOf(t, load(t, a, th), typed).OutputSpec)
	end(t, b, th, typed, session.TurnCompleted)
	same("ended", turnOf(t, load(t, db.Handle(t), th), typed).OutputSpec)
}

// jsonEqual says whether two JSON texts hold the same value (a store may
// keep a document in another spelling).
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
