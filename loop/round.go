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

// roundEnd is how a round ended: the one thing [run.loop] switches on to
// decide how the turn goes on. Where several apply, the first in this list
// wins (a journal write that failed outranks everything).
type roundEnd uint8

const (
	// endAnswer: the model replied without calls; its text (possibly
	// empty) is roundResult.visible.
	endAnswer roundEnd = iota
	// endTruncated: a reply without calls, cut by the output limit.
	endTruncated
	// endCalls: the round's calls ran; roundResult.batch holds them.
	endCalls
	// endFailed: the model call failed (roundResult.err); calls may have
	// run before it did.
	endFailed
	// endRefused: the context guard refused a request known to be too big
	// for the model; nothing was sent.
	endRefused
	// endCapped: the stream passed a cap on its output and was cut there;
	// err is the *CapError.
	endCapped
	// endTimedOut: the stream was cut at the turn's deadline (the time
	// budget), not by the caller.
	endTimedOut
	// endInterrupted: the turn's context was cancelled.
	endInterrupted
	// endJournalFailed: recording the round failed; err is the journal's.
	endJournalFailed
)

// roundResult is what one model call produced.
type roundResult struct {
	end roundEnd
	// counted: the model answered (fully, or partly with calls that ran),
	// so the round counts against the budgets.
	counted bool
	err     error
	visible string
	batch   *dispatch.Batch
	// calls are the calls handed to the dispatcher, in call order (in the
	// run's buffer: a round's result only lives until the next round).
	calls []llm.Call
}

// reading is a round's stream as it is read: what it said, and the calls
// started so far.
type reading struct {
	n     int
	phase llm.Phase
	final bool
	text  strings.Builder
	resp  *llm.Response
	err   error
	// capped: the stream passed a cap and was cut; err is the *CapError.
	capped bool
	// disp is the round's dispatch, begun at its first call (in the
	// forced final round, only for calls of keep).
	disp *dispatch.Round
	// keep names the one tool whose calls run in the forced final round
	// (the output tool of a structured answer, output.go), or is empty.
	keep  string
	calls []llm.Call
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

// request prepares the round's request. The context is shared, not
// copied — its start held apart as History when the engine splits it
// (State.prior), the rest as Items: a round costs the same at item 10 and
// item 10,000.
func (r *run) request(phase llm.Phase) *llm.Request {
	q := &r.req
	if v := r.o.Tools.Version(); v != r.specV {
		// A tool (load_tools) changed the live set: offer it from now on.
		r.specV, r.specs = v, r.o.Tools.Specs()
	}
	q.Model = r.o.ModelName
	q.System = r.o.System
	q.History, q.Items = r.st.prior, r.st.History
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
	r.askOutput(q, phase)
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
// results, and reports how it ended. It never decides how the turn goes on.
func (r *run) round(phase llm.Phase) roundResult {
	n := r.st.Rounds + 1
	r.parent.snapshot()
	if r.ev != nil {
		// Guarded here, as below: an event is a large value to build for
		// nothing.
		r.emit(event.Event{Type: event.RoundStarted, Round: n, Phase: phase})
	}
	final := phase == llm.PhaseFinal

	req := r.request(phase)
	if err := r.fit(req, false); err != nil {
		return r.ended(roundResult{end: endRefused, err: err})
	}
	ctx, cancel := r.streamContext(r.ctx, final)
	if cancel != nil {
		defer cancel()
	}
	stream, err := r.o.Model.Stream(ctx, req)
	if err != nil {
		res := roundResult{end: endFailed, err: err}
		if r.cutAtDeadline(ctx, err) {
			res.end, res.counted = endTimedOut, true
		}
		return r.ended(res)
	}
	defer stream.Close()
	rd := reading{n: n, phase: phase, final: final, calls: r.streamed[:0]}
	if final {
		rd.keep = r.keepInFinal()
	}
	r.read(stream, &rd)
	if rd.err == nil && rd.resp == nil {
		rd.err = &llm.Error{Kind: llm.StreamInterrupted, Message: "the model stream ended without a final response"}
	}
	interrupted := rd.err != nil && r.ctx.Err() != nil
	timedOut := !rd.capped && r.cutAtDeadline(ctx, rd.err)
	res := roundResult{err: rd.err, visible: rd.text.String()}

	var finish llm.FinishReason
	text := res.visible
	if rd.resp != nil {
		finish = rd.resp.Finish
		r.addUsage(rd.resp.Usage)
		if !final || rd.keep != "" {
			r.lateCalls(&rd)
		}
	} else if rd.capped {
		text = keptOfCut(text, rd.err)
	}
	item, ignored := assistantItem(rd.resp, text, rd.calls, &r.order, final, rd.keep)
	if ignored > 0 {
		// Named by this round's number: the count goes up only after it.
		r.emit(event.Event{Type: event.Warning, Code: event.WarnToolIgnored, Round: n,
			Content: "the model called tools in the forced final round; the calls were ignored"})
	}
	res.calls = rd.calls
	r.streamed = rd.calls

	// A failed stream with nothing started leaves no trace (it may be
	// retried or forced); otherwise the round is history.
	// A round counts whenever the model answered, even with nothing at
	// all (an empty or cut reply): otherwise empty rounds would slip past
	// the budgets and the hard ceiling.
	// A round cut at a cap or the deadline counts and is kept: the model
	// did answer, and what it said is what it said.
	// An interrupted round counts too: the model was called and answered
	// in part.
	res.counted = rd.err == nil || rd.disp != nil || rd.capped || timedOut || interrupted
	var journalErr error
	if len(item.Parts) > 0 && (res.counted || interrupted) {
		journalErr = r.record(item)
	}
	if rd.disp != nil {
		res.batch = rd.disp.Finish()
		// Sub-agents' usage belongs to the round that ran them.
		r.parent.foldCharges()
		for i := range res.batch.Results {
			if err := r.record(llm.ToolResult(r.cap(res.batch.Results[i]))); err != nil && journalErr == nil {
				journalErr = err
			}
		}
	}

	role := event.RoleFinish
	if res.batch != nil || finish.Truncated() {
		role = event.RoleNarration
	}
	if r.ev != nil {
		u := r.st.Usage
		r.emit(event.Event{Type: event.RoundCompleted, Round: n, Phase: phase, Role: role, AnswerVisible: finish.Truncated() && res.batch == nil, Code: string(finish)})
		r.emit(event.Event{Type: event.Usage, Round: n, Usage: &u, Cost: r.st.Cost})
	}
	if rd.resp != nil {
		r.observe(rd.resp.Usage, n)
	}

	switch {
	case journalErr != nil:
		res.end, res.err = endJournalFailed, journalErr
	case rd.capped:
		res.end = endCapped
	case timedOut:
		res.end = endTimedOut
	case rd.err != nil:
		res.end = endFailed
	case res.batch != nil:
		res.end = endCalls
	case finish.Truncated():
		res.end = endTruncated
	default:
		res.end = endAnswer
	}
	return r.ended(res)
}

// ended returns res, as interrupted when the turn was cancelled meanwhile
// (a failed journal write still outranks it: what was produced must be
// kept or the failure said).
func (r *run) ended(res roundResult) roundResult {
	if res.end != endJournalFailed && r.ctx.Err() != nil {
		res.end = endInterrupted
	}
	return res
}

// read reads the round's stream until it ends or is cut at a cap: text and
// reasoning are shown as they come, calls are handed to the dispatcher as
// their arguments complete, in call order.
func (r *run) read(stream llm.Stream, rd *reading) {
	m := &r.meter
	m.reset(r.o.MaxRoundOutput, r.o.MaxCallArgs)
	r.order.reset()
	n, phase := rd.n, rd.phase
	// cut ends the stream at a cap: closed at once, so the provider stops
	// sending, and not read again.
	cut := func(e *CapError) {
		rd.err, rd.capped = e, true
		stream.Close()
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rd.err = err
			}
			return
		}
		switch ev.Kind {
		case llm.EventText:
			if m.output(len(ev.Delta)) {
				cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
				return
			}
			rd.text.WriteString(ev.Delta)
			if r.ev != nil {
				r.emit(event.Event{Type: event.TextDelta, Round: n, Phase: phase, Delta: ev.Delta})
			}
		case llm.EventReasoning:
			if m.output(len(ev.Delta)) {
				cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
				return
			}
			if r.ev != nil {
				r.emit(event.Event{Type: event.ThinkingDelta, Round: n, Phase: phase, Delta: ev.Delta})
			}
		case llm.EventCallStart:
			if ev.Call != nil {
				if m.call(ev.Index, ev.Call.Name) {
					cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
					return
				}
				r.emit(event.Event{Type: event.CallStarted, Round: n, Index: ev.Index, CallID: ev.Call.ID, Name: ev.Call.Name})
			}
		case llm.EventCallDelta:
			if m.output(len(ev.Delta)) {
				cut(&CapError{Cap: CapRoundOutput, Limit: m.maxOut})
				return
			}
			if m.arg(ev.Index, len(ev.Delta)) {
				cut(&CapError{Cap: CapCallArgs, Limit: m.maxArgs, Call: m.name(ev.Index)})
				return
			}
			if r.ev != nil {
				r.emit(event.Event{Type: event.CallDelta, Round: n, Index: ev.Index, Delta: ev.Delta})
			}
		case llm.EventCallDone:
			if ev.Call == nil || r.order.handedOn(ev.Index) {
				continue
			}
			if e := m.done(ev.Index, ev.Call); e != nil {
				cut(e)
				return
			}
			if !r.order.put(ev.Index, ev.Call) {
				continue
			}
			for {
				c, i, ok := r.order.next(r)
				if !ok {
					break
				}
				if r.ev != nil {
					r.emit(event.Event{Type: event.CallCompleted, Round: n, Index: i, CallID: c.ID, Name: c.Name, Args: c.Args})
				}
				r.start(rd, c)
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
			rd.resp = ev.Response
			if e := m.response(rd.resp); e != nil {
				// A call the stream never announced, too big to keep: the
				// round is cut as if the stream had been.
				rd.resp = nil
				cut(e)
				return
			}
		}
	}
}

// start hands a call on: to the round's dispatch, begun at its first call,
// except in the forced final round, whose calls are ignored (but those of
// rd.keep).
func (r *run) start(rd *reading, c llm.Call) {
	rd.calls = append(rd.calls, c)
	if rd.final && (rd.keep == "" || c.Name != rd.keep) {
		return
	}
	if rd.disp == nil {
		rd.disp = r.begin(dispatch.RoundInfo{ThreadID: r.st.ThreadID, TurnID: r.st.TurnID, Round: rd.n, Phase: rd.phase, ApprovedTools: r.approvedSet})
	}
	rd.disp.Add(c)
}

// lateCalls hands on the calls of the final response that the stream never
// announced as complete.
func (r *run) lateCalls(rd *reading) {
	ci := 0
	for _, p := range rd.resp.Parts {
		if p.Kind != llm.PartCall || p.Call == nil {
			continue
		}
		if c, ok := r.order.late(ci, *p.Call, r); ok {
			r.emit(event.Event{Type: event.CallCompleted, Round: rd.n, Index: ci, CallID: c.ID, Name: c.Name, Args: c.Args})
			r.start(rd, c)
		}
		ci++
	}
}

// assistantItem builds the round's assistant item: the provider's parts as
// returned, with each call's id the one it was handed on with (o) and, in
// the forced final round, without calls but those of keep (the number
// dropped is returned); or,
// when the stream broke before a response, what did arrive: text, then the
// calls handed on.
func assistantItem(resp *llm.Response, text string, calls []llm.Call, o *callOrder, final bool, keep string) (item llm.Item, ignored int) {
	item.Role = llm.RoleAssistant
	if resp == nil {
		if text != "" {
			item.Parts = append(item.Parts, llm.Part{Kind: llm.PartText, Text: text})
		}
		for i := range calls {
			c := calls[i]
			item.Parts = append(item.Parts, llm.Part{Kind: llm.PartCall, Call: &c})
		}
		return item, 0
	}
	// The response's parts are kept as they are unless a call must change
	// (a fresh id, a call the forced round ignores): copying costs an
	// allocation per round for nothing in the usual case.
	item.Parts = resp.Parts
	ci := 0
	for i, p := range resp.Parts {
		if p.Kind != llm.PartCall || p.Call == nil {
			continue
		}
		if final && (keep == "" || p.Call.Name != keep) {
			ignored++
			if keep != "" {
				ci++ // handed on (lateCalls ran), but not kept
			}
			continue
		}
		id := o.id(ci)
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
			if p.Kind != llm.PartCall || (keep != "" && p.Call != nil && p.Call.Name == keep) {
				kept = append(kept, p)
			}
		}
		item.Parts = kept
	}
	return item, ignored
}
