package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Dispatcher runs the calls of rounds. It is safe for concurrent use by
// rounds of different turns.
type Dispatcher struct {
	cfg Config
}

// New returns a dispatcher.
func New(cfg Config) *Dispatcher { return &Dispatcher{cfg: cfg} }

// Round is one round's calls in progress. Add and Finish are called from the
// goroutine reading the model stream.
type Round struct {
	d     *Dispatcher
	ctx   context.Context
	info  RoundInfo
	calls []llm.Call
}

// Begin starts a round. Cancelling ctx cancels every call of the round
// (interrupt): running tools get the grace period, then are answered as
// aborted with their partial output.
func (d *Dispatcher) Begin(ctx context.Context, info RoundInfo) *Round {
	return &Round{d: d, ctx: ctx, info: info}
}

// Add registers the next call of the round, whose arguments are complete.
// Calls are added in call order. A call that is safe to start now starts at
// once (early start), while the model is still streaming.
func (r *Round) Add(c llm.Call) {
	r.calls = append(r.calls, c)
}

// Finish says the round has no more calls, runs what has not started (pause
// tools last), waits for every call and returns the results in call order.
// Calls that were not run still get a result, so pairing stays valid.
//
// TEMPORARY sequential implementation; replaced by the scheduler.
func (r *Round) Finish() *Batch {
	b := &Batch{Terminate: -1}
	for i, c := range r.calls {
		t, ok := r.d.cfg.Tools.Get(c.Name)
		res := llm.Result{CallID: c.ID, Name: c.Name}
		var tm Timing
		if !ok {
			res.Status = llm.ResultError
			res.Content = r.d.cfg.Tools.NotFound(c.Name)
		} else {
			tm.Start = time.Now()
			out, err := t.Run(r.ctx, tool.Call{ID: c.ID, Name: c.Name, Args: []byte(c.Args), Partial: &bytes.Buffer{}, ThreadID: r.info.ThreadID, TurnID: r.info.TurnID})
			tm.End = time.Now()
			res.Content = out.Text
			res.Meta = out.Meta
			res.Status = llm.ResultOK
			if err != nil {
				res.Status = llm.ResultError
				res.Content = fmt.Sprintf(`{"error":"tool failed","detail":%q}`, err.Error())
			} else if out.Failed {
				res.Status = llm.ResultError
			}
			if out.Terminate && b.Terminate < 0 {
				b.Terminate = i
			}
			if out.Pause != nil && b.Pause == nil {
				res.Status = llm.ResultPending
				b.Pause = &PauseRequest{Index: i, CallID: c.ID, Pause: *out.Pause}
			}
		}
		b.Results = append(b.Results, res)
		b.Timings = append(b.Timings, tm)
	}
	return b
}
