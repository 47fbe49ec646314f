package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

// pausedTurn stores turn "turn" of thread "th" paused on call "a1", its
// placeholder result pending, as a node that paused it leaves it.
func pausedTurn(t *testing.T, s *pgstore.Store) session.Turn {
	t.Helper()
	newThread(t, s, "th")
	claimTurn(t, s, "th", "turn")
	rec(t, s, "th",
		item(llm.UserText("plan a trip"), "turn", "turn.1"),
		calls("turn", "turn.2", llm.Call{ID: "a1", Name: "ask_user", Args: `{}`}),
		item(llm.ToolResult(llm.Result{CallID: "a1", Name: "ask_user", Content: "[awaiting user reply]", Status: llm.ResultPending}), "turn", "turn.3"))
	p := session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnPaused, Pause: &record.Pause{CallID: "a1"}, State: []byte(`{"turn_id":"turn"}`)}
	if err := s.SaveTurn(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// An answer is durable once acknowledged: the answering node claims the
// paused turn with it (ClaimAnswer) and stops before recording it; the
// node that takes the turn over gets the paused state and the answer to
// resume with. Once the answered item is recorded, a takeover goes on from
// the committed items instead.
func TestAnAcknowledgedAnswerIsTakenOverWithTheTurn(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	p := pausedTurn(t, a)
	answer := loop.Answer{TurnID: "turn", CallID: "a1", Text: "Paris"}
	p.Status = session.TurnInProgress
	if _, err := a.ClaimAnswer(t.Context(), p, answer); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimAnswer(t.Context(), p, loop.Answer{TurnID: "turn", CallID: "a1", Text: "Rome"}); err == nil {
		t.Error("a second answer of the answered turn was claimed")
	}
	expire(t, url, "turn")
	taken, err := b.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 {
		t.Fatalf("b took %+v, %v; want the answered turn", taken, err)
	}
	r := taken[0].Resume
	if r == nil || r.Answer.Text != "Paris" || r.Answer.CallID != "a1" || string(r.State) != `{"turn_id":"turn"}` {
		t.Fatalf("b took %+v; want the turn to resume with the answer %+v", taken[0], answer)
	}

	// b records the answered item, then is lost too: c goes on from the
	// items, the answer among them.
	if err := b.Record(t.Context(), "th", item(llm.ToolResult(llm.Result{CallID: "a1", Name: "ask_user", Content: "Paris", Status: llm.ResultOK}), "turn", "turn.3")); err != nil {
		t.Fatal(err)
	}
	c := open(t, url, pgstore.Config{Node: "c", Lease: time.Minute})
	expire(t, url, "turn")
	taken, err = c.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 || taken[0].Resume != nil || !taken[0].Lost {
		t.Fatalf("c took %+v, %v; want the turn to go on from its items", taken, err)
	}
	if n := len(taken[0].Items); n != 3 || taken[0].Items[2].Result() == nil || taken[0].Items[2].Result().Content != "Paris" {
		t.Errorf("c goes on from %d items (%+v), want the recorded answer last", n, taken[0].Items)
	}
	// Its end clears the answer.
	if err := c.SaveTurn(t.Context(), session.Turn{ID: "turn", ThreadID: "th", Status: session.TurnCompleted, Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// An interrupt asked for under a lost node's lease holds for the node that
// takes the turn over: Acquire says so, and the new lease's Pending reads
// it.
func TestAnInterruptSurvivesATakeover(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	newThread(t, a, "th")
	claimTurn(t, a, "th", "turn")
	rec(t, a, "th", item(llm.UserText("go"), "turn", "turn.1"))
	if st, err := b.RequestInterrupt(t.Context(), "th", "turn"); err != nil || st != session.TurnInProgress {
		t.Fatalf("interrupt: %s, %v", st, err)
	}
	expire(t, url, "turn")
	taken, err := b.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 || !taken[0].Interrupt {
		t.Fatalf("b took %+v, %v; want the turn with its interrupt", taken, err)
	}
	if p, err := b.Pending(t.Context(), "th", "turn"); err != nil || !p.Interrupt {
		t.Errorf("pending under b's lease: %+v, %v; want the interrupt", p, err)
	}

	// A turn not interrupted is taken without one.
	newThread(t, a, "th2")
	claimTurn(t, a, "th2", "turn2")
	expire(t, url, "turn2")
	taken, err = b.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 || taken[0].Interrupt {
		t.Fatalf("b took %+v, %v; want the turn without an interrupt", taken, err)
	}
	if p, err := b.Pending(t.Context(), "th2", "turn2"); err != nil || p.Interrupt {
		t.Errorf("pending of the turn not interrupted: %+v, %v", p, err)
	}
}

// An answer whose carrying out began (StartAnswer: an approved call is
// running) is taken over marked begun, so the taking node does not run
// the call again; a node that no longer holds the turn cannot mark it,
// and a turn claimed with an answer and never begun is taken unmarked.
func TestAnAnswerBegunIsTakenOverMarkedBegun(t *testing.T) {
	url := servicetest.Postgres(t)
	a := open(t, url, pgstore.Config{Node: "a", Lease: time.Minute})
	b := open(t, url, pgstore.Config{Node: "b", Lease: time.Minute})
	p := pausedTurn(t, a)
	answer := loop.Answer{TurnID: "turn", CallID: "a1", Decision: loop.Approve}
	p.Status = session.TurnInProgress
	if _, err := a.ClaimAnswer(t.Context(), p, answer); err != nil {
		t.Fatal(err)
	}
	if err := b.StartAnswer(t.Context(), "th", "turn"); !errors.Is(err, session.ErrLeaseLost) {
		t.Errorf("a node not holding the turn marked its answer begun: %v, want ErrLeaseLost", err)
	}
	if err := a.StartAnswer(t.Context(), "th", "turn"); err != nil {
		t.Fatal(err)
	}
	expire(t, url, "turn")
	taken, err := b.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 || taken[0].Resume == nil {
		t.Fatalf("b took %+v, %v; want the answered turn", taken, err)
	}
	if r := taken[0].Resume; !r.Begun || r.Answer.Decision != loop.Approve {
		t.Errorf("b took the resumption %+v, want it begun with the approval", *r)
	}
	if err := a.StartAnswer(t.Context(), "th", "turn"); !errors.Is(err, session.ErrLeaseLost) {
		t.Errorf("the lost node marked the answer after the takeover: %v, want ErrLeaseLost", err)
	}

	// Paused again and answered again: not begun until marked.
	p.Status = session.TurnPaused
	if err := b.SaveTurn(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	p.Status = session.TurnInProgress
	if _, err := b.ClaimAnswer(t.Context(), p, answer); err != nil {
		t.Fatal(err)
	}
	c := open(t, url, pgstore.Config{Node: "c", Lease: time.Minute})
	expire(t, url, "turn")
	taken, err = c.Acquire(t.Context(), 5, readOnly)
	if err != nil || len(taken) != 1 || taken[0].Resume == nil || taken[0].Resume.Begun {
		t.Fatalf("c took %+v, %v; want the answered turn, not begun", taken, err)
	}
}
