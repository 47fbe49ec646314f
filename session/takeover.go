package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// Handoff is what a store shared by several nodes offers to hand a running
// turn over (pgstore.Store): Handover ends this node's lease on the turn
// at once, so that another node takes the turn and goes on with it from
// its committed items (its next writes from this node are refused). A
// scheduler whose store is a Handoff leaves its running turns at a round
// boundary when it drains (Scheduler.Drain) instead of interrupting them.
type Handoff interface {
	Handover(ctx context.Context, turnID string) error
}

// ErrLeaseLost is matched by a store's refusal of a write of a turn this
// node no longer owns (pgstore.LeaseLostError): its lease ended and
// another node took the turn. A run whose write is refused so stops being
// the turn's: what it does from there is neither recorded nor published,
// the owner's run is.
var ErrLeaseLost = errors.New("session: this node no longer owns the turn; another node runs it")

// ErrDraining is matched by the refusal of new work by a scheduler that is
// draining (Scheduler.Drain). It also matches ErrTurnBusy: the client
// sends the request to another node.
var ErrDraining = errors.New("session: this node is draining (shutting down); send the request to another node")

// drainingError is ErrDraining, matching ErrTurnBusy as well.
type drainingError struct{}

func (drainingError) Error() string { return ErrDraining.Error() }
func (drainingError) Is(target error) bool {
	return target == ErrDraining || target == ErrTurnBusy
}

// WarnRoundSuperseded is the warning code of the event that tells
// subscribers a turn taken over from a lost node goes on from its last
// committed item: whatever they saw stream of the turn after that item (a
// model round being read, a tool's live output) is void and is produced
// again. Extra["after"] holds the id of the last committed item of the
// turn ("" when none).
const WarnRoundSuperseded = "round_superseded"

// Continuation is a running turn this scheduler takes over: a queued turn
// another node left, or a running turn whose node was lost (its lease
// expired) or handed it over. The store has made the turn this node's
// (pgstore.Store.Acquire) before Continue is called.
type Continuation struct {
	// Turn is the turn's record; ID and ThreadID are required.
	Turn Turn
	// Lost says the turn had begun running elsewhere: it goes on from its
	// committed items rather than starting.
	Lost bool
	// Rerun are the turn's calls that were in flight when its node
	// stopped. Those whose tool only reads (tool.ReadOnly, and never asks
	// the user) run again before the next model request; the others are
	// answered "aborted: node lost", so the model decides.
	Rerun []llm.Call
	// Steers is the input steered into the turn and not yet read.
	Steers []llm.Item
	// Resume, when not nil, says the turn was paused and claimed with an
	// answer its node acknowledged but never recorded: the turn resumes
	// from its paused state with that answer (Lost is ignored).
	Resume *Resumption
	// Interrupt says an interrupt was asked for before this node took
	// the turn: it ends interrupted rather than going on.
	Interrupt bool
}

// lostInFlight is the result of a call a lost node was running that is not
// run again.
const lostInFlight = "aborted: node lost: the rein node running this call stopped; it may have partly run. Check the current state before retrying it."

// continuation is what a taken-over turn goes on from.
type continuation struct {
	// items are the turn's committed items; rerun the calls it had in
	// flight.
	items []llm.Item
	rerun []llm.Call
}

// Continue runs a turn taken over from another node (see Continuation): the
// thread is read from the store, the only truth, and the turn goes on
// from its last committed item in a runner of this scheduler. It returns
// once the turn is launched; an error means it was not, and the caller
// hands the turn back (Handoff) for another node to take.
func (s *Scheduler) Continue(ctx context.Context, c Continuation) error {
	if c.Turn.ID == "" || c.Turn.ThreadID == "" {
		return errors.New("session: Continue: the turn needs an id and a thread id")
	}
	if s.draining.Load() {
		return drainingError{}
	}
	snap, err := s.c.Store.LoadThread(ctx, c.Turn.ThreadID)
	if err != nil {
		return fmt.Errorf("session: take over turn %s: %w", c.Turn.ID, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	th, ok := s.threads[c.Turn.ThreadID]
	if !ok {
		th = &thread{info: snap.Thread}
		s.threads[c.Turn.ThreadID] = th
	}
	th.used = s.c.Now()
	s.mu.Unlock()

	th.mu.Lock()
	defer th.mu.Unlock()
	if a := th.active; a != nil && a.rec.ID == c.Turn.ID && a.state == nil && th.running {
		// This node started the turn meanwhile (it queued it, or ran the
		// turn before it): nothing to take over; handing it back would
		// end the lease it runs under.
		return nil
	}
	if th.active != nil || th.running {
		return fmt.Errorf("session: take over turn %s: this node already runs turn %s of the thread: %w", c.Turn.ID, activeID(th), ErrTurnBusy)
	}
	// The thread as the store holds it: its turns, and its queued turns
	// to run here after this one (input steered into ended turns and
	// never read is left for the next load, which stores it).
	fresh, leftover := loaded(snap)
	var history, items []llm.Item
	for _, it := range fresh.history {
		if it.TurnID == c.Turn.ID {
			items = append(items, it)
		} else {
			history = append(history, it)
		}
	}
	var rec *Turn
	for _, r := range fresh.turns {
		if r.ID == c.Turn.ID {
			rec = r
		}
	}
	if rec == nil {
		return fmt.Errorf("session: take over turn %s: the store has no such turn of thread %s", c.Turn.ID, c.Turn.ThreadID)
	}
	th.info = fresh.info
	th.history, th.carry, th.stale = history, nil, false
	th.turns = slices.DeleteFunc(fresh.turns, func(r *Turn) bool { return leftover != nil && r == leftover.rec })
	th.queue = slices.DeleteFunc(fresh.queue, func(q *turnRun) bool { return q == leftover })
	rec.Status = TurnInProgress
	t := &turnRun{rec: rec, input: rec.Input, interrupt: c.Interrupt}
	switch {
	case c.Resume != nil:
		st := pausedState(&Turn{State: c.Resume.State})
		if st == nil {
			return fmt.Errorf("session: take over turn %s: its paused state cannot be read", c.Turn.ID)
		}
		// Resumed as the answering node would have: the history without
		// the paused turn's items, which the state holds.
		a := c.Resume.Answer
		t.state, t.answer = st, &a
		if c.Resume.Begun {
			// The lost node was carrying the answer out: unless the
			// answered call may run twice, the turn goes on from its
			// committed items instead (run decides, with the run's
			// tools).
			t.cont = &continuation{items: items}
		}
	case c.Lost && len(items) > 0:
		t.cont = &continuation{items: items, rerun: c.Rerun}
	}
	for _, it := range c.Steers {
		t.inbox.put(it)
	}
	th.active = t
	th.notify()
	return s.launch(th, t)
}

func activeID(th *thread) string {
	if th.active == nil {
		return "(starting)"
	}
	return th.active.rec.ID
}

// goOn runs a taken-over turn on eng from its committed items: the calls
// in flight whose tool only reads run again, the others are answered as
// aborted first, as are the calls whose result is a pause placeholder (a
// lost node was carrying out their answer, or they waited behind it), and
// subscribers are told that what streamed after the last committed item
// is superseded.
func (s *Scheduler) goOn(ctx context.Context, eng *loop.Engine, o loop.Options, lt loop.Turn, c *continuation) (*loop.Outcome, error) {
	after := ""
	if n := len(c.items); n > 0 {
		after = c.items[n-1].ID
	}
	o.Events.Handle(s.stampTurn(lt.ThreadID, lt.ID, event.Event{Type: event.Warning, Code: WarnRoundSuperseded,
		Content: "the node running this turn stopped; the turn goes on on another node from its last stored item, and what was streamed after it is produced again",
		Extra:   map[string]any{"after": after}}))
	items := slices.Clone(c.items)
	for i := range items {
		it, ok := abortedPlaceholder(items[i], lostInFlight)
		if !ok {
			continue
		}
		if err := s.c.Store.Record(context.WithoutCancel(ctx), lt.ThreadID, it); err != nil {
			return nil, fmt.Errorf("session: take over turn %s: %w", lt.ID, err)
		}
		o.Events.Handle(s.stampTurn(lt.ThreadID, lt.ID, event.Event{Type: event.ItemAdded, Item: &it}))
		items[i] = it
	}
	var rerun []llm.Call
	k := 0
	for _, call := range c.rerun {
		if readOnly(o.Tools, call.Name) {
			rerun = append(rerun, call)
			continue
		}
		k++
		it := llm.ToolResult(llm.Result{CallID: call.ID, Name: call.Name, Content: lostInFlight, Status: llm.ResultAborted})
		it.ID, it.TurnID = lt.ID+".lost.r"+strconv.Itoa(k), lt.ID
		if err := s.c.Store.Record(context.WithoutCancel(ctx), lt.ThreadID, it); err != nil {
			return nil, fmt.Errorf("session: take over turn %s: %w", lt.ID, err)
		}
		o.Events.Handle(s.stampTurn(lt.ThreadID, lt.ID, event.Event{Type: event.ItemAdded, Item: &it}))
		items = append(items, it)
	}
	return eng.Continue(ctx, lt, items, rerun)
}

// answerRuns says whether answer a of the pause in st runs a call that may
// not run twice: an approval approved, of a tool that changes things (not
// a tool's own pause, whose answer goes back to it).
func answerRuns(ts *tool.Set, st *loop.State, a loop.Answer) bool {
	p := st.Pause
	if p == nil || p.Kind != tool.PauseApproval || p.Resume != nil {
		return false
	}
	if a.Decision != loop.Approve && a.Decision != loop.ApproveThread {
		return false
	}
	return !readOnly(ts, p.Tool)
}

// startAnswer marks in the store, when it keeps answers (AnswerStarter),
// that answer a of the paused turn t is carried out from here, before the
// call it approves runs; the other answers need no mark (resumed again
// they change nothing twice).
func (s *Scheduler) startAnswer(ctx context.Context, threadID string, t *turnRun, ts *tool.Set, st *loop.State, a loop.Answer) error {
	as, ok := s.c.Store.(AnswerStarter)
	if !ok || !answerRuns(ts, st, a) {
		return nil
	}
	if err := as.StartAnswer(context.WithoutCancel(ctx), threadID, t.rec.ID); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			t.gone.Store(true)
		}
		return fmt.Errorf("the approved call was not run: marking its start failed: %w", err)
	}
	return nil
}

// readOnly says whether a call to name may run twice: its tool changes
// nothing and never asks the user.
func readOnly(ts *tool.Set, name string) bool {
	if ts == nil {
		return false
	}
	t, ok := ts.Get(name)
	if !ok {
		return false
	}
	sp := t.Spec()
	return sp.Access == tool.ReadOnly && !sp.Pauses
}

// stampTurn is stamp for an event of a turn given by id.
func (s *Scheduler) stampTurn(threadID, turnID string, e event.Event) event.Event {
	e.Time = s.c.Now()
	e.ThreadID, e.TurnID = threadID, turnID
	return e
}

// fencedJournal is a run's journal: a write the store refuses because
// another node owns the turn now (ErrLeaseLost) makes the run the turn's
// no more (turnRun.gone). It is the store to the run's tools too: a
// sub-agent (agent/task) keeps its thread and turn through SaveThread and
// SaveTurn of the journal it is given (children.go).
type fencedJournal struct {
	t    *turnRun
	next Store
	// owner is the run's thread's owner, its sub-agents' too
	// (children.go).
	owner string
}

func (j fencedJournal) Record(ctx context.Context, threadID string, it llm.Item) error {
	return j.fenced(j.next.Record(ctx, threadID, it))
}

func (j fencedJournal) fenced(err error) error {
	if err != nil && errors.Is(err, ErrLeaseLost) {
		j.t.gone.Store(true)
	}
	return err
}
