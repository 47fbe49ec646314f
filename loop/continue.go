package loop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/reinhq/rein/dispatch"
	"github.com/reinhq/rein/llm"
)

// StopYielded is the stop reason of a turn the engine left at a round
// boundary because Options.Yield asked it to: nothing was recorded for its
// end, and the turn goes on elsewhere (Engine.Continue) from its items.
const StopYielded StopReason = "handed_over"

// Continue goes on with a turn whose run stopped between its items: the
// node running it was lost, or handed it over at a round boundary
// (Options.Yield). t.History is the thread before the turn (t.Input is not
// read); items are the turn's items as committed, which are taken as they
// are: committed rounds are not run again. The calls in rerun (calls of
// items without a result, which may safely run twice: read-only tools) run
// first and their results are recorded; then the turn requests its next
// round. No turn_started is emitted: the turn started where it began.
func (e *Engine) Continue(ctx context.Context, t Turn, items []llm.Item, rerun []llm.Call) (*Outcome, error) {
	if t.ID == "" {
		return nil, errors.New("loop: Continue needs the turn's id")
	}
	for i := range items {
		if items[i].TurnID != t.ID {
			return nil, fmt.Errorf("loop: item %s belongs to turn %q, not %q", items[i].ID, items[i].TurnID, t.ID)
		}
	}
	st := &State{Version: stateVersion, ThreadID: t.ThreadID, TurnID: t.ID, Approved: t.Approved}
	e.begin(st, Turn{History: t.History})
	st.History = append(st.History, items...)
	st.carry.known = false
	tallyItems(st, items)
	r := e.newRun(ctx, st)
	if len(rerun) > 0 {
		if out, err := r.rerun(rerun); out != nil {
			return out, err
		}
	}
	return r.loop()
}

// tallyItems sets a continued turn's counters from its committed items:
// each model reply is a round (in settlement once the settlement directive
// was recorded), each batch of results a tool step, and new items are
// numbered after the highest number the turn's ids carry.
func tallyItems(st *State, items []llm.Item) {
	results := false
	for _, it := range items {
		if n, ok := strings.CutPrefix(it.ID, st.TurnID+"."); ok {
			if k, err := strconv.Atoi(n); err == nil && k > st.NextItem {
				st.NextItem = k
			}
		}
		switch {
		case it.Role == llm.RoleAssistant:
			if results {
				st.ToolSteps++
			}
			results = false
			st.Rounds++
			if st.SettleStarted {
				st.SettlementRounds++
			} else {
				st.ExplorationRound++
			}
		case it.Role == llm.RoleTool:
			results = true
		case it.Origin == llm.OriginDirective && it.Text() == settleDirective:
			st.SettleStarted = true
		case it.Origin == llm.OriginDirective && it.Text() == nudgeDirective:
			st.Nudged = true
		}
	}
	if results {
		st.ToolSteps++
	}
}

// rerun runs again calls the turn's runner had in flight when it stopped,
// as a round of their own, and records their results. It returns nil when
// the turn goes on.
func (r *run) rerun(calls []llm.Call) (*Outcome, error) {
	rd := r.begin(dispatch.RoundInfo{ThreadID: r.st.ThreadID, TurnID: r.st.TurnID, Round: r.st.Rounds, Phase: llm.PhaseExplore, ApprovedTools: r.approvedSet})
	for _, c := range calls {
		rd.Add(c)
	}
	res := roundResult{calls: calls, batch: rd.Finish(), end: endCalls}
	// The round's tool step, which the lost runner did not get to count.
	r.st.ToolSteps++
	for i := range res.batch.Results {
		if err := r.record(llm.ToolResult(r.cap(res.batch.Results[i]))); err != nil {
			return r.fail(StopProviderError, err)
		}
	}
	if r.ctx.Err() != nil {
		return r.interrupted()
	}
	return r.ranCalls(llm.PhaseExplore, res)
}

// yielded leaves the turn at a round boundary (Options.Yield): nothing is
// recorded and no end is announced; the turn goes on elsewhere.
func (r *run) yielded() (*Outcome, error) {
	return r.outcome(StatusInterrupted, StopYielded), nil
}
