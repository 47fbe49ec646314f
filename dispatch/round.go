package dispatch

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Defaults of the Config fields left zero.
const (
	DefaultMaxCalls     = 8
	DefaultGrace        = 2 * time.Second
	DefaultTimeout      = 2 * time.Minute
	DefaultPartialLimit = 8 << 10
)

// Dispatcher runs the calls of rounds. It is safe for concurrent use by
// rounds of different turns.
type Dispatcher struct {
	cfg    Config
	events event.Handler
	// timers are Finish's wake-up timers, reused across rounds.
	timers sync.Pool
}

// New returns a dispatcher; zero fields of cfg take their defaults.
func New(cfg Config) *Dispatcher {
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = DefaultMaxCalls
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.PartialLimit <= 0 {
		cfg.PartialLimit = DefaultPartialLimit
	}
	// Tools finish on their own goroutines; handlers see one event at a time.
	return &Dispatcher{cfg: cfg, events: event.Serial(cfg.Events)}
}

func (d *Dispatcher) redact(s string) string {
	if d.cfg.Redact == nil || s == "" {
		return s
	}
	return d.cfg.Redact(s)
}

// Round is one round's calls in progress. Add and Finish are called from
// one goroutine, the one reading the model stream; the calls run on
// goroutines of their own.
type Round struct {
	d    *Dispatcher
	ctx  context.Context
	info RoundInfo
	// hold keeps every call until Finish (no early start).
	hold bool

	// Owned by the goroutine calling Add and Finish.
	calls    []*call
	held     []*call
	pause    *call // the honoured pause call
	warned   bool  // the too_many_calls warning was sent
	finished *Batch

	// notify is signalled (without blocking) each time a call is settled,
	// to wake Finish. A watched round shares its Watch's: a signal left by
	// an earlier round (a call abandoned by its Finish and settled later)
	// only wakes this round's Finish for one more look.
	notify chan struct{}
	// stopAfter unregisters the round's cancellation hook; nil when the
	// round was begun with a Watch, which watch is.
	stopAfter func() bool
	watch     *Watch

	mu sync.Mutex
	// cancelAt is when ctx was cancelled, zero before.
	cancelAt time.Time

	// first and one hold a round's first call and the start of calls: a
	// round is begun at its first call and most have one, so it costs no
	// allocations of its own beyond the Round. batch1 is the Batch of such
	// a round.
	first  call
	one    [1]*call
	batch1 batchOf1
}

// call is one call of a round. Its fields up to mu-guarded ones are set by
// Add before the call can start and only read afterwards.
type call struct {
	index int
	llm   llm.Call
	tool  tool.Tool
	args  json.RawMessage
	// input is args as the tool's Decoder decoded them, or nil.
	input   any
	canon   string // canonical arguments, computed when first compared
	keys    tool.Keys
	pauses  bool
	timeout time.Duration
	// runnable: the call passed its checks and was not answered by Add.
	runnable bool
	deps     []*call
	// partial is the call's tool.Call.Partial; a value, one allocation
	// fewer per call.
	partial partial
	// ctx is the context the tool runs under (run).
	ctx callCtx

	// approval: the call waits for the user's approval and did not run.
	approval bool
	// why is why the call's arguments need the user's approval
	// (tool.CallApprover), "" when they do not.
	why string

	// Guarded by Round.mu. settled: the outcome below is written (after
	// answered was set).
	started, answered, abandoned, settled bool
	// done is closed once the call is settled. Only a later call that
	// conflicts with this one waits on it, so it is made then (by
	// conflicting, under Round.mu, unless already settled): most calls
	// never need one.
	done chan struct{}

	// Written once by whoever set answered, before settled is set; read
	// by others only after they saw settled, or done closed.
	res       llm.Result
	timing    Timing
	terminate bool
	pauseReq  *tool.Pause
}

// Begin starts a round. Cancelling ctx cancels every call of the round
// (interrupt): running tools get the grace period, then are answered as
// aborted with their partial output.
func (d *Dispatcher) Begin(ctx context.Context, info RoundInfo) *Round {
	r := d.begin(ctx, info, make(chan struct{}, 1))
	r.stopAfter = context.AfterFunc(ctx, r.noteCancel)
	return r
}

// BeginWatched is Begin for a round of a turn whose context w watches: w's
// hook notes the cancellation for the round, instead of a hook of the
// round's own (three allocations each round). The rounds of a Watch run
// one at a time.
func (d *Dispatcher) BeginWatched(w *Watch, info RoundInfo) *Round {
	r := d.begin(w.ctx, info, w.notify)
	r.watch = w
	w.attach(r)
	return r
}

func (d *Dispatcher) begin(ctx context.Context, info RoundInfo, notify chan struct{}) *Round {
	r := &Round{
		d:      d,
		ctx:    ctx,
		info:   info,
		hold:   d.cfg.NoEarlyStart || info.Phase == llm.PhaseFinal,
		notify: notify,
	}
	r.calls = r.one[:0]
	return r
}

// unhook stops telling the round of the cancellation; from then on it
// is done with it.
func (r *Round) unhook() {
	if r.watch != nil {
		r.watch.detach(r)
		return
	}
	r.stopAfter()
}

// Watch notes when a turn's context is cancelled and tells the round in
// progress (see BeginWatched).
type Watch struct {
	ctx  context.Context
	stop func() bool
	// notify is the rounds' Round.notify, made once for all of them.
	notify chan struct{}

	mu    sync.Mutex
	fired bool   // ctx was cancelled
	round *Round // the round in progress, or nil
}

// NewWatch watches ctx until Stop.
func NewWatch(ctx context.Context) *Watch {
	w := &Watch{ctx: ctx, notify: make(chan struct{}, 1)}
	w.stop = context.AfterFunc(ctx, w.cancelled)
	return w
}

// Stop unregisters the watch from its context, once no round begun with
// it is in progress (a cancellation after Stop is noticed only when a
// round waits).
func (w *Watch) Stop() {
	w.stop()
}

func (w *Watch) cancelled() {
	w.mu.Lock()
	w.fired = true
	r := w.round
	w.mu.Unlock()
	if r != nil {
		r.noteCancel()
	}
}

// attach makes r the round in progress; one begun after the cancellation
// notes it at once, as a hook registered on a cancelled context runs at
// once.
func (w *Watch) attach(r *Round) {
	w.mu.Lock()
	w.round = r
	fired := w.fired
	w.mu.Unlock()
	if fired {
		r.noteCancel()
	}
}

func (w *Watch) detach(r *Round) {
	w.mu.Lock()
	if w.round == r {
		w.round = nil
	}
	w.mu.Unlock()
}

// noteCancel records when the round was cancelled: the grace period runs
// from then, not from when Finish notices.
func (r *Round) noteCancel() {
	r.mu.Lock()
	if r.cancelAt.IsZero() {
		r.cancelAt = time.Now()
	}
	r.mu.Unlock()
	r.wake()
}

func (r *Round) wake() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Add registers the next call of the round, whose arguments are complete.
// Calls are added in call order. A call that is safe to start now starts at
// once (early start), while the model is still streaming. A call added after
// Finish is ignored.
func (r *Round) Add(c llm.Call) {
	if r.finished != nil {
		return
	}
	var k *call
	if len(r.calls) == 0 {
		k = &r.first
	} else {
		k = new(call)
	}
	k.index, k.llm = len(r.calls), c
	r.calls = append(r.calls, k)
	if k.index >= r.d.cfg.MaxCalls {
		r.tooMany(k)
		return
	}
	if msg := r.check(k); msg != "" {
		r.refuse(k, llm.ResultError, msg)
		return
	}
	if k.pauses {
		if r.pause != nil {
			r.refuse(k, llm.ResultNotRun, secondPauseText(r.pause))
			return
		}
		r.pause = k
		return
	}
	if first := r.duplicateOf(k); first != nil {
		r.refuse(k, llm.ResultDuplicate, duplicateText(first))
		return
	}
	if r.d.cfg.Approval != nil && !r.info.Approved {
		// A call its arguments make ask (tool.CallApprover) is asked
		// whatever the thread approved: the tool's spec needs approval for
		// this call, and the policy decides as for any such tool.
		spec := k.tool.Spec()
		k.why = tool.ApprovalFor(r.ctx, k.tool, k.args)
		if k.why != "" {
			spec.NeedsApproval = true
		}
		if k.why != "" || !r.info.ApprovedTools[k.llm.Name] {
			switch r.d.cfg.Approval(spec, k.llm) {
			case tool.Ask:
				k.approval = true
				r.refuse(k, llm.ResultPending, approvalText(k.llm.Name))
				return
			case tool.Refuse:
				r.refuse(k, llm.ResultError, refusedText(k.llm.Name, k.why))
				return
			}
		}
	}
	k.runnable = true
	k.deps = r.conflicting(k)
	k.partial.half = r.d.cfg.PartialLimit / 2
	if r.hold {
		r.held = append(r.held, k)
		return
	}
	go r.run(k)
}

// tooMany answers a call past the limit and warns, once per round.
func (r *Round) tooMany(k *call) {
	limit := r.d.cfg.MaxCalls
	r.refuse(k, llm.ResultNotRun, tooManyText(k.index, limit))
	if !r.warned {
		r.warned = true
		r.emit(event.Event{Type: event.Warning, Code: event.WarnTooManyCall, Content: tooManyWarning(limit)})
	}
}

// refuse answers a call that will not run.
func (r *Round) refuse(k *call, status llm.ResultStatus, text string) {
	r.answer(k, outcome{res: llm.Result{Status: status, Content: text}})
}

// Finish says the round has no more calls, runs what has not started (pause
// tools last), waits for every call and returns the results in call order.
// Calls that were not run still get a result, so pairing stays valid. After
// a cancellation it returns within the grace period. Calling it again
// returns the same batch.
func (r *Round) Finish() *Batch {
	if r.finished != nil {
		return r.finished
	}
	defer r.unhook()
	for _, k := range r.held {
		go r.run(k)
	}
	r.held = nil
	r.await(r.calls)
	if p := r.pause; p != nil {
		switch {
		case r.ctx.Err() != nil:
			r.answer(p, r.notStarted())
		case r.terminated() != nil:
			r.refuse(p, llm.ResultNotRun, pauseAfterTerminateText(r.terminated()))
		default:
			p.runnable = true
			p.partial.half = r.d.cfg.PartialLimit / 2
			go r.run(p)
			r.await(r.calls[p.index : p.index+1])
		}
	}
	r.finished = r.batch()
	return r.finished
}

// terminated returns the first call whose result ended the turn, or nil.
// Only called once the calls it looks at are settled.
func (r *Round) terminated() *call {
	for _, k := range r.calls {
		if k.terminate {
			return k
		}
	}
	return nil
}

// batch collects the settled calls in call order.
func (r *Round) batch() *Batch {
	var b *Batch
	if len(r.calls) == 1 {
		// No allocation for the usual round: the batch is the Round's.
		one := &r.batch1
		b = &one.b
		b.Results, b.Timings = one.res[:], one.tim[:]
	} else {
		b = &Batch{Results: make([]llm.Result, len(r.calls)), Timings: make([]Timing, len(r.calls))}
	}
	b.Terminate = -1
	// plain: a pause that the answer alone resolves (no tool state to
	// resume) is honoured; a second such pause is not.
	plain := false
	for i, k := range r.calls {
		b.Results[i] = k.res
		b.Timings[i] = k.timing
		if k.approval {
			b.Approvals = append(b.Approvals, i)
			if k.why != "" {
				if b.Why == nil {
					b.Why = make(map[int]string)
				}
				b.Why[i] = k.why
			}
		}
		if k.terminate && b.Terminate < 0 {
			b.Terminate = i
		}
		if k.pauseReq == nil {
			continue
		}
		if b.Pause == nil {
			b.Pause = &PauseRequest{Index: i, CallID: k.llm.ID, Pause: *k.pauseReq}
			plain = k.pauseReq.Resume == nil
			continue
		}
		if k.pauseReq.Resume != nil || !plain {
			// A tool that resumes itself with the answer (a sub-agent):
			// its pause waits its turn after the first.
			b.MorePauses = append(b.MorePauses, PauseRequest{Index: i, CallID: k.llm.ID, Pause: *k.pauseReq})
			plain = plain || k.pauseReq.Resume == nil
			continue
		}
		// A second pause from a tool that is not a pause tool (an approval
		// asked while ask_user also ran): one pause per turn stop.
		b.Results[i].Status = llm.ResultError
		b.Results[i].Content = secondPauseText(r.calls[b.Pause.Index])
	}
	return b
}

// batchOf1 is the batch of a round of one call with its results.
type batchOf1 struct {
	b   Batch
	res [1]llm.Result
	tim [1]Timing
}

func (r *Round) emit(e event.Event) {
	h := r.d.events
	if h == nil {
		return
	}
	e.Time = time.Now()
	e.ThreadID = r.info.ThreadID
	e.TurnID = r.info.TurnID
	e.Round = r.info.Round
	e.Phase = r.info.Phase
	h.Handle(e)
}
