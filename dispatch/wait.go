package dispatch

import (
	"time"

	"github.com/reinhq/rein/llm"
)

// await returns when every runnable call in ks is settled. A call still running
// past its deadline plus the grace period, or past the grace period after
// the round was cancelled, is abandoned here: answered at once, its tool
// left to return on its own goroutine (which then exits).
func (r *Round) await(ks []*call) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			// Stopped timers are safe to Reset (Go 1.23 timers hold no
			// stale tick), so the next round can reuse this one.
			timer.Stop()
			r.d.timers.Put(timer)
		}
	}()
	done := r.ctx.Done()
	for {
		// No runtime.Gosched before parking: under many busy turns it
		// puts this goroutine behind every runnable one (session's
		// BenchmarkConcurrentTurnsOverHTTP, 1,000 threads: the gap between
		// a thread's rounds went from 13 µs to 57–140 ms at the median).
		next, pending := r.sweep(ks)
		if !pending {
			return
		}
		var tick <-chan time.Time
		if !next.IsZero() {
			if timer == nil {
				if t, ok := r.d.timers.Get().(*time.Timer); ok {
					timer = t
				} else {
					timer = time.NewTimer(time.Hour)
				}
			}
			timer.Reset(time.Until(next))
			tick = timer.C
		}
		select {
		case <-r.notify:
		case <-tick:
		case <-done:
			// The hook may not have run yet; the grace period starts now
			// at the latest.
			r.noteCancel()
			done = nil
		}
	}
}

// sweep abandons the calls whose time is up and reports whether any call
// is still unsettled and when the next one's time is up (zero: none has a
// limit yet).
func (r *Round) sweep(ks []*call) (next time.Time, pending bool) {
	// now is read once a call has a limit to compare with: usually none
	// has (the call has not started, or is done), and the clock costs as
	// much as the rest of a sweep.
	var now time.Time
	grace := r.d.cfg.Grace
	type abandoned struct {
		k       *call
		started bool
	}
	var out []abandoned
	r.mu.Lock()
	cancelled := !r.cancelAt.IsZero()
	var cancelLimit time.Time
	if cancelled {
		cancelLimit = r.cancelAt.Add(grace)
	}
	for _, k := range ks {
		if !k.runnable {
			// Answered by Add, or the pause call not yet launched.
			continue
		}
		if k.settled {
			continue
		}
		pending = true
		if k.answered {
			// Being settled right now; its wake-up follows.
			continue
		}
		limit := cancelLimit
		if k.started {
			if dl := k.timing.Start.Add(k.timeout + grace); limit.IsZero() || dl.Before(limit) {
				limit = dl
			}
		}
		if limit.IsZero() {
			continue
		}
		if now.IsZero() {
			now = time.Now()
		}
		if !now.Before(limit) {
			k.answered = true
			k.abandoned = k.started
			out = append(out, abandoned{k, k.started})
			continue
		}
		if next.IsZero() || limit.Before(next) {
			next = limit
		}
	}
	r.mu.Unlock()
	for _, a := range out {
		var o outcome
		switch {
		case !a.started:
			o = r.notStarted()
		case cancelled && !now.Before(cancelLimit):
			o.res = r.abortedResult(a.k, now, "")
		default:
			o.res = llm.Result{Status: llm.ResultError, Content: r.timeoutText(a.k, true)}
		}
		r.settle(a.k, &o, a.started, now)
	}
	return next, pending
}
