package loop

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/reinhq/rein/dispatch"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// roundResult is what one model call produced.
type roundResult struct {
	// counted: the model answered (fully, or partly with calls that ran),
	// so the round counts against the budgets.
	counted     bool
	finish      llm.FinishReason
	visible     string
	batch       *dispatch.Batch
	calls       []llm.Call
	err         error
	journalErr  error
	interrupted bool
	// guarded: the error is the context guard's, not the provider's.
	guarded bool
	// capped: the stream passed a cap on its output and was cut there; err
	// is the *CapError.
	capped bool
	// timedOut: the stream was cut at the turn's deadline (the time
	// budget), not by the caller.
	timedOut bool
}

// streamContext returns the context of a round's model stream: the turn's,
// with the time budget's deadline when there is one, so that a stream in
// flight is cut when the budget runs out and not only checked between
// rounds. The forced final round gets at least a grace of its own.
func (r *run) streamContext(parent context.Context, final bool) (context.Context, context.CancelFunc) {
	b := r.o.Budget.Time
	if b <= 0 {
		return parent, nil
	}
	left := b - (r.st.Elapsed + r.o.Now().Sub(r.began))
	if final {
		left = max(left, min(max(b/10, minFinalGrace), maxFinalGrace))
	}
	return context.WithDeadlineCause(parent, time.Now().Add(left), errDeadline)
}

// cutAtDeadline reports whether err ended a stream of ctx because the
// turn's deadline passed.
func (r *run) cutAtDeadline(ctx context.Context, err error) bool {
	return err != nil && r.ctx.Err() == nil && context.Cause(ctx) == errDeadline
}

// request prepares the round's request. The history slice is shared, not
// copied: a round costs the same at item 10 and item 10,000.
func (r *run) request(phase llm.Phase) *llm.Request {
	q := &r.req
	if v := r.o.Tools.Version(); v != r.specV {
		// A tool (load_tools) changed the live set: offer it from now on.
		r.specV, r.specs = v, r.o.Tools.Specs()
	}
	q.Model = r.o.ModelName
	q.System = r.o.System
	q.Items = r.st.History
	q.Tools = r.specs
	q.ToolChoice = llm.ToolChoiceAuto
	if phase == llm.PhaseFinal {
		// Definitions stay (prompt cache, providers that need them beside
		// earlier tool messages); calls are forbidden.
		q.ToolChoice = llm.ToolChoiceNone
	}
	if len(r.specs) == 0 {
		q.Tools = nil
		q.ToolChoice = ""
	}
	q.MaxOutputTokens = r.o.MaxOutputTokens
	q.Temperature = r.o.Temperature
	q.ParallelCalls = true
	q.TurnID = r.st.TurnID
	q.Round = r.st.Rounds + 1
	q.Phase = phase
	return q
}

// round makes one model call, starts calls as their arguments complete
// (not in the forced final round), records the assistant item and the
// results, and reports what happened. It never decides how the turn goes on.
func (r *run) round(phase llm.Phase) roundResult {
	var res roundResult
	n := r.st.Rounds + 1
	if r.ev != nil {
		// Guarded here, as below: an event is a large value to build for
		// nothing.
		r.emit(event.Event{Type: event.RoundStarted, Round: n, Phase: phase})
	}
	final := phase == llm.PhaseFinal

	req := r.request(phase)
	if err := r.fit(req, false); err != nil {
		res.err = err
		res.guarded = true
		res.interrupted = r.ctx.Err() != nil
		return res
	}
	ctx, cancel := r.streamContext(r.ctx, final)
	if cancel != nil {
		defer cancel()
	}
	stream, err := r.o.Model.Stream(ctx, req)
	if err != nil {
		res.err = err
		res.interrupted = r.ctx.Err() != nil
		res.timedOut = r.cutAtDeadline(ctx, err)
		res.counted = res.timedOut
		return res
	}
	defer stream.Close()
	m := &r.meter
	m.reset(r.o.MaxRoundOutput, r.o.MaxCallArgs)

	var (
		disp    *dispatch.Round
		visible strings.Builder
		resp    *llm.Response
		ids     []string          // call id by index, after de-duplication
		pending map[int]*llm.Call // calls completed out of index order
		// calls added to the dispatcher, in order; in the run's buffer,
		// as the round's result only lives until the next round.
		streamed = r.streamed[:0]
	)
	add := func(c llm.Call) {
		streamed = append(streamed, c)
		if final {
			return
		}
		if disp == nil {
			disp = r.begin(dispatch.RoundInfo{ThreadID: r.st.ThreadID, TurnID: r.st.TurnID, Round: n, Phase: phase, ApprovedTools: r.approvedSet})
		}
		disp.Add(c)
	}
	// cut ends the stream at a cap: closed at once, so the provider stops
	// sending, and not read again.
	cut := func(e *CapError) {
		res.err, res.capped = e, true
		stream.Close()
	}
recv:
	for {
		ev, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				res.err = err
			}
			break
		}
		switch ev.Kind {
		case llm.EventText:
			if m.output(len(ev.Delta)) {
				cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
				break recv
			}
			visible.WriteString(ev.Delta)
			if r.ev != nil {
				r.emit(event.Event{Type: event.TextDelta, Round: n, Phase: phase, Delta: ev.Delta})
			}
		case llm.EventReasoning:
			if m.output(len(ev.Delta)) {
				cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
				break recv
			}
			if r.ev != nil {
				r.emit(event.Event{Type: event.ThinkingDelta, Round: n, Phase: phase, Delta: ev.Delta})
			}
		case llm.EventCallStart:
			if ev.Call != nil {
				if m.call(ev.Index, ev.Call.Name) {
					cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
					break recv
				}
				r.emit(event.Event{Type: event.CallStarted, Round: n, Index: ev.Index, CallID: ev.Call.ID, Name: ev.Call.Name})
			}
		case llm.EventCallDelta:
			if m.output(len(ev.Delta)) {
				cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
				break recv
			}
			if m.arg(ev.Index, len(ev.Delta)) {
				cut(&CapError{Cap: CapCallArgs, Limit: m.maxArgs, Call: m.name(ev.Index)})
				break recv
			}
			if r.ev != nil {
				r.emit(event.Event{Type: event.CallDelta, Round: n, Index: ev.Index, Delta: ev.Delta})
			}
		case llm.EventCallDone:
			if ev.Call == nil || ev.Index < len(ids) {
				continue
			}
			if e := m.done(ev.Index, ev.Call); e != nil {
				cut(e)
				break recv
			}
			c := *ev.Call
			if ev.Index > len(ids) {
				// Out of order: hold it until the calls before it are in,
				// so the dispatcher sees calls in call order.
				if pending == nil {
					pending = make(map[int]*llm.Call)
				}
				held := c
				pending[ev.Index] = &held
				continue
			}
			for {
				c.ID = r.uniqueID(c.ID)
				ids = append(ids, c.ID)
				if r.ev != nil {
					r.emit(event.Event{Type: event.CallCompleted, Round: n, Index: len(ids) - 1, CallID: c.ID, Name: c.Name, Args: c.Args})
				}
				add(c)
				next, ok := pending[len(ids)]
				if !ok {
					break
				}
				delete(pending, len(ids))
				c = *next
			}
		case llm.EventRetry:
			if ri := ev.Retry; ri != nil {
				msg := ""
				if ri.Err != nil {
					msg = r.redact(ri.Err.Error())
				}
				r.emit(event.Event{Type: event.Retry, Round: n, Attempt: ri.Attempt, Max: ri.Max, Content: msg, Duration: float64(ri.Delay.Microseconds()) / 1000})
			}
		case llm.EventDone:
			resp = ev.Response
			if e := m.response(resp); e != nil {
				// A call the stream never announced, too big to keep: the
				// round is cut as if the stream had been.
				resp = nil
				cut(e)
				break recv
			}
		}
	}
	if res.err == nil && resp == nil {
		res.err = &llm.Error{Kind: llm.StreamInterrupted, Message: "the model stream ended without a final response"}
	}
	if res.err != nil && r.ctx.Err() != nil {
		res.interrupted = true
	}
	if !res.capped && r.cutAtDeadline(ctx, res.err) {
		res.timedOut = true
	}
	res.visible = visible.String()

	// Build the assistant item: the provider's parts as returned, with call
	// ids made unique; or, when the stream broke, what did arrive.
	var item llm.Item
	item.Role = llm.RoleAssistant
	ignored := 0
	if resp != nil {
		res.finish = resp.Finish
		r.addUsage(resp.Usage)
		// The response's parts are kept as they are unless a call must
		// change (a fresh id, a call the forced round ignores): copying
		// costs an allocation per round for nothing in the usual case.
		item.Parts = resp.Parts
		ci := 0
		for i, p := range resp.Parts {
			if p.Kind != llm.PartCall || p.Call == nil {
				continue
			}
			if final {
				ignored++
				continue
			}
			var id string
			if ci < len(ids) {
				id = ids[ci]
			} else {
				// A call the stream never announced as complete.
				c := *p.Call
				c.ID = r.uniqueID(c.ID)
				id = c.ID
				ids = append(ids, c.ID)
				r.emit(event.Event{Type: event.CallCompleted, Round: n, Index: ci, CallID: c.ID, Name: c.Name, Args: c.Args})
				add(c)
			}
			ci++
			if id != p.Call.ID {
				if &item.Parts[0] == &resp.Parts[0] {
					item.Parts = append([]llm.Part(nil), resp.Parts...)
				}
				c := *p.Call
				c.ID = id
				item.Parts[i].Call = &c
			}
		}
		if ignored > 0 {
			kept := make([]llm.Part, 0, len(resp.Parts)-ignored)
			for _, p := range item.Parts {
				if p.Kind != llm.PartCall {
					kept = append(kept, p)
				}
			}
			item.Parts = kept
		}
	} else {
		if res.visible != "" {
			text := res.visible
			if res.capped {
				text = keptOfCut(text, res.err)
			}
			item.Parts = append(item.Parts, llm.Part{Kind: llm.PartText, Text: text})
		}
		for i := range streamed {
			c := streamed[i]
			item.Parts = append(item.Parts, llm.Part{Kind: llm.PartCall, Call: &c})
		}
	}
	if ignored > 0 {
		// Named by this round's number: the count goes up only after it.
		r.emit(event.Event{Type: event.Warning, Code: event.WarnToolIgnored, Round: n,
			Content: "the model called tools in the forced final round; the calls were ignored"})
	}
	res.calls = streamed
	r.streamed = streamed

	// A failed stream with nothing started leaves no trace (it may be
	// retried or forced); otherwise the round is history.
	// A round counts whenever the model answered, even with nothing at
	// all (an empty or cut reply): otherwise empty rounds would slip past
	// the budgets and the hard ceiling.
	// A round cut at a cap or the deadline counts and is kept: the model
	// did answer, and what it said is what it said.
	// An interrupted round counts too: the model was called and answered
	// in part.
	res.counted = res.err == nil || disp != nil || res.capped || res.timedOut || res.interrupted
	keep := len(item.Parts) > 0 && (res.err == nil || disp != nil || res.interrupted || res.capped || res.timedOut)
	if keep {
		if err := r.record(item); err != nil {
			res.journalErr = err
		}
	}
	if disp != nil {
		res.batch = disp.Finish()
		for i := range res.batch.Results {
			if err := r.record(llm.ToolResult(r.cap(res.batch.Results[i]))); err != nil && res.journalErr == nil {
				res.journalErr = err
			}
		}
	}

	role := event.RoleFinish
	if res.batch != nil || res.finish.Truncated() {
		role = event.RoleNarration
	}
	if r.ev != nil {
		u := r.st.Usage
		r.emit(event.Event{Type: event.RoundCompleted, Round: n, Phase: phase, Role: role, AnswerVisible: res.finish.Truncated() && res.batch == nil, Code: string(res.finish)})
		r.emit(event.Event{Type: event.Usage, Round: n, Usage: &u, Cost: r.st.Cost})
	}
	if resp != nil {
		r.observe(resp.Usage, n)
	}
	return res
}
