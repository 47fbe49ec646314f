package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// outcome is how a call was settled.
type outcome struct {
	res       llm.Result
	terminate bool
	pause     *tool.Pause
}

// run is the goroutine of one call. It waits for the earlier calls it
// conflicts with, runs the tool under its deadline and settles the call.
// It exits when the tool returns, even when Finish has long since
// abandoned the call.
func (r *Round) run(k *call) {
	if len(k.deps) > 0 && !r.waitDeps(k) {
		return
	}
	if !r.start(k) {
		return
	}
	if r.d.events != nil {
		r.emitStarted(k)
		r.watchOutput(k)
	}

	// The deadline counts from the start just recorded, as the sweep's
	// limit does; WithTimeout would read the clock again.
	ctx := &k.ctx
	ctx.init(r.ctx, k.timing.Start.Add(k.timeout))
	out, err := invoke(ctx, k, &r.info)
	// Past its own deadline, not the round's.
	late := err != nil && r.ctx.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	ctx.end()
	r.conclude(k, &out, err, late, time.Now())
}

// conclude turns what the tool returned into the call's outcome and
// settles the call.
//
// run's own frame is kept small: the outcome is built here and failures
// apart (failed), events in functions of their own, values passed by
// pointer. A call's goroutine starts on a small stack that a no-op call
// then fits in; growing it (copying the stack, adjusting every frame) cost
// more than the rest of such a call's run.
func (r *Round) conclude(k *call, out *tool.Output, err error, late bool, end time.Time) {
	var o outcome
	if err != nil || out.Failed || out.Pause != nil {
		r.failed(&o, k, out, err, late, end)
	} else {
		text := r.d.redact(out.Text)
		if text == "" {
			// Some providers refuse an empty tool message, and the model
			// reads an empty one as a failure.
			text = noOutputText
		}
		o.res = llm.Result{Status: llm.ResultOK, Content: text}
	}
	o.res.Meta = r.d.redactMeta(out.Meta)
	o.terminate = out.Terminate && err == nil
	r.settleAt(k, &o, end)
}

// failed is the outcome of a call that did not simply succeed, apart from
// conclude to keep the common path's frames small.
func (r *Round) failed(o *outcome, k *call, out *tool.Output, err error, late bool, end time.Time) {
	// invoke returns a *panicError as is; an error of the tool's is never
	// one (the type is this package's own).
	pe, panicked := err.(*panicError)
	switch {
	case panicked:
		o.res = llm.Result{Status: llm.ResultError, Content: errorText(
			k.llm.Name+" panicked", r.d.redact(fmt.Sprint(pe.value)), r.d.redact(k.partial.String()))}
	case err != nil && r.ctx.Err() != nil:
		o.res = r.abortedResult(k, end, out.Text)
	case err != nil && late:
		o.res = llm.Result{Status: llm.ResultError, Content: r.timeoutText(k, false)}
	case err != nil:
		o.res = llm.Result{Status: llm.ResultError, Content: errorText(
			k.llm.Name+" failed", r.d.redact(err.Error()), r.d.redact(k.partial.String()))}
	case out.Failed:
		text := r.d.redact(out.Text)
		if text == "" {
			text = errorText(k.llm.Name+" failed", "the tool gave no detail", "")
		}
		o.res = llm.Result{Status: llm.ResultError, Content: text}
	default: // out.Pause != nil
		p := *out.Pause
		o.pause = &p
		o.res = llm.Result{Status: llm.ResultPending, Content: out.Text}
	}
}

// emitStarted sends tool_started; apart from run (and not inlined into
// it) to keep run's frame small (see conclude): an event is a large value.
//
//go:noinline
func (r *Round) emitStarted(k *call) {
	r.emit(event.Event{Type: event.ToolStarted, CallID: k.llm.ID, Name: k.llm.Name, Index: k.index, Args: k.llm.Args})
}

// waitDeps waits for the earlier calls k conflicts with and reports
// whether k may run; when not, k is settled.
func (r *Round) waitDeps(k *call) bool {
	for _, d := range k.deps {
		// d.done was made before k's goroutine started, if d was not
		// settled by then; nil: it was.
		if d.done != nil {
			select {
			case <-d.done:
			case <-r.ctx.Done():
				r.answer(k, r.notStarted())
				return false
			}
		}
		r.mu.Lock()
		blocked := d.abandoned
		r.mu.Unlock()
		if blocked {
			// The earlier call still holds the resource; running on it
			// could interleave two writes.
			r.refuse(k, llm.ResultNotRun, blockedText(d))
			return false
		}
	}
	return true
}

// start marks k running unless it was settled meanwhile or the round was
// cancelled before it could start.
func (r *Round) start(k *call) bool {
	r.mu.Lock()
	if k.answered {
		r.mu.Unlock()
		return false
	}
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		r.answer(k, r.notStarted())
		return false
	}
	k.started = true
	k.timing.Start = time.Now()
	r.mu.Unlock()
	// Finish may be waiting with no deadline to watch; now there is one.
	r.wake()
	return true
}

// panicError carries the value a tool panicked with.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// invoke runs the tool, turning a panic into a *panicError.
func invoke(ctx context.Context, k *call, info *RoundInfo) (out tool.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = tool.Output{}, &panicError{p}
		}
	}()
	out, err = k.tool.Run(ctx, tool.Call{
		ID:       k.llm.ID,
		Name:     k.llm.Name,
		Args:     k.args,
		Partial:  &k.partial,
		ThreadID: info.ThreadID,
		TurnID:   info.TurnID,
		Input:    k.input,
	})
	return out, err
}

// answer settles k with o unless it is settled already (abandoned by
// Finish while the tool kept running).
func (r *Round) answer(k *call, o outcome) {
	r.settleAt(k, &o, time.Now())
}

// settleAt is answer with the time the call ended; o is a pointer to keep
// the caller's frame small (see failed).
func (r *Round) settleAt(k *call, o *outcome, end time.Time) {
	r.mu.Lock()
	if k.answered {
		r.mu.Unlock()
		return
	}
	k.answered = true
	started := k.started
	r.mu.Unlock()
	r.settle(k, o, started, end)
}

// settle records the outcome of a call its caller has claimed (answered
// set under the lock), sends the result event, then releases whoever waits
// on the call. The event goes first so that no one sees the round end
// before every result event was sent.
func (r *Round) settle(k *call, o *outcome, started bool, end time.Time) {
	o.res.CallID = k.llm.ID
	o.res.Name = k.llm.Name
	k.res = o.res
	k.terminate = o.terminate
	k.pauseReq = o.pause
	var ms float64
	if started {
		k.timing.End = end
		ms = float64(end.Sub(k.timing.Start)) / float64(time.Millisecond)
	}
	if r.d.events != nil {
		k.partial.unwatch()
		r.emitResult(k, ms)
	}
	r.mu.Lock()
	k.settled = true
	done := k.done
	r.mu.Unlock()
	if done != nil {
		close(done)
	}
	r.wake()
}

// emitResult sends the result event; apart from settle so that a round
// without a handler keeps a small frame on the call's goroutine.
func (r *Round) emitResult(k *call, ms float64) {
	r.emit(event.Event{Type: event.Result, CallID: k.llm.ID, Name: k.llm.Name, Index: k.index,
		Status: string(k.res.Status), Content: k.res.Content, Duration: ms})
}
