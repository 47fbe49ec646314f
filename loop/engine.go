// Package loop is rein's turn engine (DESIGN §2): rounds, narration and
// finish, the exploration budget, settlement, the forced final round,
// truncated and empty rounds, model errors by round, the token, cost and
// time budgets, loop detection, pauses and interruption.
//
// Where a round ends is decided in one place: [run.loop] in this file.
package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/dispatch"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Engine runs turns. It is safe for concurrent use by several turns; each
// turn runs on the caller's goroutine.
type Engine struct {
	o    Options
	disp *dispatch.Dispatcher
	// out is the structured answer asked for (Options.Output), or nil.
	out *outputSpec
	// split: requests carry the caller's history apart from the turn's
	// items (llm.Request.History), so a turn does not copy it; only when
	// the model and the window guard, if any, read it (llm.HistoryReader).
	split bool
}

// New returns an engine, or an error saying which option is wrong.
func New(o Options) (*Engine, error) {
	c, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	c.Events = event.Serial(c.Events)
	out, err := newOutput(&c)
	if err != nil {
		return nil, err
	}
	e := &Engine{o: c, out: out}
	e.split = llm.ReadsHistory(c.Model) && (c.Window == nil || llm.ReadsHistory(c.Window))
	e.disp = dispatch.New(dispatch.Config{
		Tools:          c.Tools,
		MaxCalls:       c.MaxCallsPerRound,
		Grace:          c.Grace,
		DefaultTimeout: c.DefaultToolTimeout,
		Timeouts:       c.ToolTimeouts,
		Redact:         c.Redact,
		Events:         c.Events,
		NoEarlyStart:   c.NoEarlyStart,
		Approval:       approvalOf(c.Policy),
	})
	return e, nil
}

// The dispatcher's approval of calls under each policy, made once: a
// closure of a run's own would be an allocation a run, and one over its
// options put the whole Options on the heap.
func approveNever(s tool.Spec, _ llm.Call) tool.Verdict { return tool.PolicyNever.Verdict(s) }
func approveOnRequest(s tool.Spec, _ llm.Call) tool.Verdict {
	return tool.PolicyOnRequest.Verdict(s)
}
func approveUntrusted(s tool.Spec, _ llm.Call) tool.Verdict {
	return tool.PolicyUntrusted.Verdict(s)
}

// approvalOf returns the dispatcher's approval of calls under policy p.
func approvalOf(p tool.Policy) func(tool.Spec, llm.Call) tool.Verdict {
	switch p {
	case tool.PolicyNever:
		return approveNever
	case tool.PolicyOnRequest:
		return approveOnRequest
	case tool.PolicyUntrusted:
		return approveUntrusted
	}
	return func(s tool.Spec, _ llm.Call) tool.Verdict { return p.Verdict(s) }
}

// Turn is the input of one turn.
type Turn struct {
	ThreadID string
	// ID is the turn id; generated when empty.
	ID string
	// History is the thread so far. Directives of earlier turns are left
	// out of the context; the slice is not modified.
	History []llm.Item
	// Input is the user's message: one or more user-role items.
	Input []llm.Item
	// Approved are the tools the user approved for the whole thread.
	Approved []string
	// Carry is what the thread's previous turn left (its Outcome.Carry),
	// or nil. When it stands for History, the turn starts from it in
	// O(its own items) instead of copying History's context.
	Carry *Carry
}

// Run runs a turn until it completes, pauses, is interrupted (ctx
// cancelled) or fails. The outcome is always returned; the error is non-nil
// exactly when the turn failed, and wraps the cause (a typed *llm.Error for
// provider failures).
func (e *Engine) Run(ctx context.Context, t Turn) (*Outcome, error) {
	if len(t.Input) == 0 {
		return nil, errors.New("loop: the turn has no input; give at least one user item")
	}
	for i := range t.Input {
		if t.Input[i].Role != llm.RoleUser {
			return nil, fmt.Errorf("loop: input item %d has role %q; turn input must be user items", i, t.Input[i].Role)
		}
	}
	id := t.ID
	if id == "" {
		id = NewID("turn")
	}
	st := &State{Version: stateVersion, ThreadID: t.ThreadID, TurnID: id, Approved: t.Approved}
	e.begin(st, t)
	r := e.newRun(ctx, st)
	r.emit(event.Event{Type: event.TurnStarted})
	for _, it := range t.Input {
		if err := r.record(it); err != nil {
			return r.fail(StopProviderError, err)
		}
	}
	return r.loop()
}

// run is one turn in progress.
type run struct {
	e     *Engine
	o     *Options
	ctx   context.Context
	jctx  context.Context // ctx without its cancellation (journalCtx)
	st    *State
	ev    event.Handler
	began time.Time
	req   llm.Request
	specs []llm.ToolSpec
	specV uint64 // the tool set's version specs were built from
	guard Guard  // the context window guard, or nil
	edits []int  // items replaced since the guard's last Fit
	// compacted: the provider refused the request as too long and the
	// history was compacted for a retry; cleared when a round gets through.
	compacted bool
	// approvedSet is st.Approved as a set, kept beside it so no round
	// rebuilds it.
	approvedSet map[string]bool
	// watch notes the cancellation of ctx for the turn's rounds; made at
	// the first round with calls, stopped when the turn's rounds end.
	watch *dispatch.Watch
	// streamed is the last round's calls (roundResult.calls), its array
	// reused by the next round: a round's result is done with by then.
	streamed []llm.Call
	// meter counts each round's output against the caps; its array is
	// reused round after round.
	meter meter
	// order puts each round's completed calls in call order, with ids
	// unique in the thread; reused round after round.
	order callOrder
	// parent is what the turn's tool calls see of it (ParentOf): a
	// sub-agent's budgets, usage and events go through it.
	parent *Parent
	// parentRoom is where parent is made: in the run's allocation, which
	// it keeps alive anyway (Parent.r).
	parentRoom Parent
	// ids makes the ids of the items the turn records.
	ids itemIDs
}

func (e *Engine) newRun(ctx context.Context, st *State) *run {
	r := &run{e: e, o: &e.o, st: st, ev: e.o.Events, began: e.o.Now()}
	r.ctx = r.withParent(ctx)
	if e.o.Window != nil {
		r.guard = e.o.Window.Guard()
	}
	for _, n := range st.Approved {
		r.approve(n)
	}
	r.specV = e.o.Tools.Version()
	r.specs = e.o.Tools.Specs()
	if e.out != nil {
		out := e.out.Output
		st.Output = &out
	}
	return r
}

// loop runs rounds until the turn ends. Every way a turn can end is here.
func (r *run) loop() (*Outcome, error) {
	defer r.unwatch()
	st, o := r.st, r.o
	for {
		if r.ctx.Err() != nil {
			return r.interrupted()
		}
		if o.Yield != nil && o.Yield() {
			return r.yielded()
		}
		if err := r.drainSteer(); err != nil {
			return r.fail(StopProviderError, err)
		}
		if reason := r.budgetSpent(); reason != "" {
			return r.forcedFinish(reason)
		}
		phase := llm.PhaseExplore
		if st.ExplorationRound >= o.MaxRounds {
			if st.SettlementRounds >= o.MaxSettlementRounds {
				reason := StopForcedBudget
				if st.SettleCause != "" {
					reason = st.SettleCause
				}
				return r.forcedFinish(reason)
			}
			if !st.SettleStarted {
				st.SettleStarted = true
				r.warn(event.WarnSettlement, "exploration budget spent; settling: finishing started work, then answering")
				if err := r.record(llm.Directive(settleDirective)); err != nil {
					return r.fail(StopProviderError, err)
				}
			}
			phase = llm.PhaseSettle
		}

		res := r.round(phase)
		r.tally(phase, res)
		switch res.end {
		case endJournalFailed, endRefused:
			// A refused request would only be refused the same way in a
			// forced final round.
			return r.fail(StopProviderError, res.err)
		case endInterrupted:
			return r.interrupted()
		case endCapped:
			// A model that streams past a cap is not asked again.
			r.warn(event.WarnOutputCap, res.err.Error())
			return r.fail(StopOutputCapped, res.err)
		case endTimedOut:
			r.warn(event.WarnDeadline, "the time budget ran out while the model was answering; its stream was cut")
			return r.forcedFinish(StopForcedTime)
		case endFailed:
			if r.retryCompacted(phase, res) {
				continue
			}
			return r.modelFailed(res)
		case endCalls:
			r.compacted = false
			if out, err := r.ranCalls(phase, res); out != nil {
				return out, err
			}
		case endTruncated:
			r.compacted = false
			st.Continued = append(st.Continued, res.visible)
			r.warn(event.WarnTruncated, "the answer was cut by the output limit; asking the model to continue")
			if err := r.record(llm.Directive(continueDirective)); err != nil {
				return r.fail(StopProviderError, err)
			}
		case endAnswer:
			r.compacted = false
			if out, err := r.answered(res); out != nil {
				return out, err
			}
		}
	}
}

// tally counts a round: against the budgets of its phase when the model
// answered, as a tool step when its calls ran and the turn goes on to
// report them.
func (r *run) tally(phase llm.Phase, res roundResult) {
	st := r.st
	if res.counted {
		st.Rounds++
		if phase == llm.PhaseSettle {
			st.SettlementRounds++
		} else {
			st.ExplorationRound++
		}
	}
	if res.batch != nil && res.end != endJournalFailed && res.end != endInterrupted {
		st.ToolSteps++
	}
}

// modelFailed ends a turn whose model call failed: with the error when no
// round got through or part of this one was already shown, else with a
// forced final round on what was gathered.
func (r *run) modelFailed(res roundResult) (*Outcome, error) {
	if !res.counted && r.st.Rounds == 0 {
		return r.fail(StopProviderError, res.err)
	}
	var le *llm.Error
	if errors.As(res.err, &le) && le.Shown {
		// Part of the round was already shown: the error surfaces as
		// retryable rather than being papered over.
		return r.fail(StopProviderError, res.err)
	}
	r.warn(event.WarnForced, "a model call failed: "+r.redact(res.err.Error()))
	return r.forcedFinish(StopForcedError)
}

// ranCalls goes on after a round whose calls ran: loop detection, a
// terminating tool, pauses. It returns nil when the turn goes on.
func (r *run) ranCalls(phase llm.Phase, res roundResult) (*Outcome, error) {
	st := r.st
	if out, err := r.outputCalled(res, StopFinished, false); out != nil {
		return out, err
	}
	if r.detectLoop(res) && phase == llm.PhaseExplore {
		st.ExplorationRound = r.o.MaxRounds
		st.SettleCause = StopForcedLoop
		r.warn(event.WarnLoop, "the same call returned the same result repeatedly; moving to settlement")
	}
	if t := res.batch.Terminate; t >= 0 {
		if err := r.dropApprovals(res.batch); err != nil {
			return r.fail(StopProviderError, err)
		}
		return r.complete(StopTerminatedByTool, r.answer(res.batch.Results[t].Content))
	}
	if res.batch.Pause != nil || len(res.batch.Approvals) > 0 {
		return r.pause(res)
	}
	return nil, nil
}

// answered finishes the turn on a round without calls, unless its reply was
// empty (the model is nudged once) or steer arrived while it streamed. It
// returns nil when the turn goes on.
func (r *run) answered(res roundResult) (*Outcome, error) {
	st := r.st
	if strings.TrimSpace(res.visible) == "" {
		if !st.Nudged {
			st.Nudged = true
			r.warn(event.WarnEmptyNudge, "the model answered with no visible text; nudging it once")
			if err := r.record(llm.Directive(nudgeDirective)); err != nil {
				return r.fail(StopProviderError, err)
			}
			return nil, nil
		}
		return r.fail(StopEmptyAnswer, ErrEmptyAnswer)
	}
	// Steer that arrived while the finish round streamed is never
	// dropped: the turn goes on for a round that reads it.
	steered, err := r.steer()
	if err != nil {
		return r.fail(StopProviderError, err)
	}
	if steered {
		return nil, nil
	}
	return r.finishWith(StopFinished, r.answer(res.visible))
}

// begin starts a round of calls, watched by the turn's one cancellation
// hook (a hook per round costs three allocations).
func (r *run) begin(info dispatch.RoundInfo) *dispatch.Round {
	if r.watch == nil {
		r.watch = dispatch.NewWatch(r.ctx)
	}
	return r.e.disp.BeginWatched(r.watch, info)
}

func (r *run) unwatch() {
	if r.watch != nil {
		r.watch.Stop()
		r.watch = nil
	}
}

// ErrEmptyAnswer is the error of a turn whose model gave no visible answer
// twice (stop reason empty_answer).
var ErrEmptyAnswer = errors.New("the model produced no visible answer, even after a nudge; try again, raise the output limit or lower the reasoning effort")

// answer joins the continuation parts of truncated rounds with the last text.
func (r *run) answer(last string) string {
	if len(r.st.Continued) == 0 {
		return strings.TrimSpace(last)
	}
	return strings.TrimSpace(strings.Join(r.st.Continued, "") + last)
}

func (r *run) complete(reason StopReason, answer string) (*Outcome, error) {
	o := r.outcome(StatusCompleted, reason)
	o.Answer = answer
	r.finished(o)
	return o, nil
}

func (r *run) fail(reason StopReason, err error) (*Outcome, error) {
	o := r.outcome(StatusFailed, reason)
	err = r.redactErr(err)
	o.Err = err
	r.finished(o)
	return o, err
}

func (r *run) outcome(s Status, reason StopReason) *Outcome {
	st := r.st
	st.Elapsed += r.o.Now().Sub(r.began)
	r.began = r.o.Now()
	var c *Carry
	if s != StatusPaused {
		c = r.handOn()
	}
	return &Outcome{
		ThreadID:         st.ThreadID,
		TurnID:           st.TurnID,
		Status:           s,
		StopReason:       reason,
		Rounds:           st.Rounds,
		SettlementRounds: st.SettlementRounds,
		ToolSteps:        st.ToolSteps,
		Usage:            st.Usage,
		Cost:             st.Cost,
		Items:            st.TurnItems(),
		Approved:         st.Approved,
		Carry:            c,
	}
}

func (r *run) finished(o *Outcome) {
	if r.ev != nil {
		r.emit(event.Event{Type: event.TurnCompleted, Status: string(o.Status), Code: string(o.StopReason), Turn: o.Summary()})
	}
}

// approve records a tool approved for the whole thread.
func (r *run) approve(name string) {
	if r.approvedSet == nil {
		r.approvedSet = make(map[string]bool)
	}
	if !r.approvedSet[name] {
		r.approvedSet[name] = true
		if !slices.Contains(r.st.Approved, name) {
			r.st.Approved = append(r.st.Approved, name)
		}
	}
}
