package loop

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// Parent is what a tool call sees of the turn that made it, for a tool that
// runs a child turn of its own (a sub-agent, package agent/task): the
// engine's options to build the child from, what is left of the turn's
// budgets, its depth, a way to charge the child's usage to the turn and to
// show the child's events on the turn's stream. The engine puts it in the
// context of every call (ParentOf).
type Parent struct {
	r        *run
	threadID string
	turnID   string
	depth    int
	// waitMu lets one child at a time ask the user in process: children
	// of one round run in parallel, and a terminal asks one thing at once.
	waitMu sync.Mutex

	mu       sync.Mutex
	left     Left
	approved []string
	// charged is the children's usage and cost not yet added to the turn's.
	charged     llm.Usage
	chargedCost float64
	// chargedRounds are the children's rounds not yet added to the
	// turn's round budget.
	chargedRounds int
}

// Left is what is left of a turn's budgets when its current round began;
// zero for a budget the turn does not have.
type Left struct {
	// Rounds is what is left of the round budget of the turn's phase
	// (exploration, or settlement once it began); at least 1.
	Rounds int
	Tokens int64
	Cost   float64
	Time   time.Duration
}

type parentKey struct{}

// ParentOf returns the turn that made the tool call running under ctx, or
// nil outside a call.
func ParentOf(ctx context.Context) *Parent {
	p, _ := ctx.Value(parentKey{}).(*Parent)
	return p
}

// withParent makes the run's context carry its Parent for its tool calls.
// The depth is one more than the turn's own parent's: a child turn runs
// under its parent's call context.
func (r *run) withParent(ctx context.Context) context.Context {
	p := &r.parentRoom
	p.r, p.threadID, p.turnID = r, r.st.ThreadID, r.st.TurnID
	if up := ParentOf(ctx); up != nil {
		p.depth = up.depth + 1
	}
	r.parent = p
	p.snapshot()
	return context.WithValue(ctx, parentKey{}, p)
}

// Depth is the turn's depth: 0 for a turn a user started, 1 for a child of
// one, and so on.
func (p *Parent) Depth() int { return p.depth }

// ThreadID and TurnID name the turn.
func (p *Parent) ThreadID() string { return p.threadID }

// TurnID names the turn.
func (p *Parent) TurnID() string { return p.turnID }

// Options returns the engine's options for a child to start from: the
// model, the system prompt, the tool set, the approval policy, the
// redactor, the context window, the Waiter (serialized: one child asks at
// a time). The turn's own event handler, journal and steer inbox are left
// out: a child has its own.
func (p *Parent) Options() Options {
	o := *p.r.o
	o.Events, o.Journal, o.Steer = nil, nil, nil
	if o.Waiter != nil {
		o.Waiter = &serialWaiter{mu: &p.waitMu, w: o.Waiter}
	}
	return o
}

// Journal returns the turn's journal, nil when it has none: a tool that
// runs a child turn may keep the child's history in the same store, as a
// thread of its own (package agent/task).
func (p *Parent) Journal() Journal { return p.r.o.Journal }

// Left returns what was left of the turn's budgets when its current round
// began.
func (p *Parent) Left() Left {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.left
}

// Approved returns the tools the user approved for the whole thread.
func (p *Parent) Approved() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.approved)
}

// Charge adds a child's usage and cost to the turn's: they count against
// its token and cost budgets and show in its outcome.
func (p *Parent) Charge(u llm.Usage, cost float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.charged = p.charged.Add(u)
	p.chargedCost += cost
}

// ChargeRounds adds rounds a child ran to the turn's round budget: the
// turn's max_rounds bounds its own rounds and its children's together. The
// rounds count against the phase the turn is in (exploration, or
// settlement once it began); the turn's own round numbering is unchanged.
func (p *Parent) ChargeRounds(n int) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.chargedRounds += n
}

// Emit shows a child's event on the turn's stream, carried by a Subagent
// event of the call callID.
func (p *Parent) Emit(callID string, e event.Event) {
	r := p.r
	if r.ev == nil {
		return
	}
	depth := p.depth + 1
	if e.Type == event.Subagent {
		depth = e.Depth
	}
	r.ev.Handle(event.Event{Type: event.Subagent, Time: r.o.Now(), ThreadID: p.threadID, TurnID: p.turnID, CallID: callID, Sub: &e, Depth: depth})
}

// snapshot records the turn's budgets left, for children started in the
// round about to begin. Called on the run's goroutine before each round,
// when no call of the turn runs.
func (p *Parent) snapshot() {
	r := p.r
	st, o := r.st, r.o
	var l Left
	if st.ExplorationRound < o.MaxRounds {
		l.Rounds = o.MaxRounds - st.ExplorationRound
	} else {
		l.Rounds = o.MaxSettlementRounds - st.SettlementRounds
	}
	l.Rounds = max(l.Rounds, 1)
	if b := o.Budget.Tokens; b > 0 {
		l.Tokens = max(b-st.Usage.Total(), 1)
	}
	if b := o.Budget.Cost; b > 0 {
		l.Cost = max(b-st.Cost, 1e-9)
	}
	if b := o.Budget.Time; b > 0 {
		l.Time = max(b-(st.Elapsed+o.Now().Sub(r.began)), time.Millisecond)
	}
	p.mu.Lock()
	p.left = l
	if len(p.approved) != len(st.Approved) {
		// Approvals only grow: a clone per change, not per round.
		p.approved = slices.Clone(st.Approved)
	}
	p.mu.Unlock()
}

// foldCharges adds what children charged since the last fold to the turn's
// usage and cost. Called on the run's goroutine.
func (p *Parent) foldCharges() {
	p.mu.Lock()
	u, c, n := p.charged, p.chargedCost, p.chargedRounds
	p.charged, p.chargedCost, p.chargedRounds = llm.Usage{}, 0, 0
	p.mu.Unlock()
	st := p.r.st
	if n > 0 {
		if st.ExplorationRound < p.r.o.MaxRounds {
			st.ExplorationRound += n
		} else {
			st.SettlementRounds += n
		}
	}
	if u == (llm.Usage{}) && c == 0 {
		return
	}
	st.Usage = st.Usage.Add(u)
	st.Cost += c
}

// serialWaiter lets one Wait through at a time.
type serialWaiter struct {
	mu *sync.Mutex
	w  Waiter
}

func (s *serialWaiter) Wait(ctx context.Context, p Pause) (Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Wait(ctx, p)
}
