// Package rein is an agent harness: the runtime around a language model that
// builds its context, offers it tools, runs the calls it makes (in parallel
// where safe), feeds the results back, knows when to stop, and lets a person
// steer, queue or interrupt a turn while it runs.
//
// This package is the facade a library user starts from; the common case
// needs no other import:
//
//	model, err := rein.OpenModel("openai:gpt-5-mini", rein.ModelOptions{Key: key})
//	agent, err := rein.New(rein.Options{Model: model, Tools: []rein.Tool{weather}})
//	thread := agent.NewThread()
//	out, err := thread.Run(ctx, "What is the weather in Shanghai and Beijing?")
//	fmt.Println(out.Status, out.Answer)
//
// The engine itself lives in package loop, the per-round scheduler in
// dispatch, the model API in llm, and tools in tool and tools/....
package rein

import (
	"context"
	"errors"
	"sync"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// Re-exported names a library user needs without importing the packages
// that define them.
type (
	// Model is a language model (package llm); OpenModel opens one from a
	// spec.
	Model = llm.Model
	// Tool is something the model can call.
	Tool = tool.Tool
	// ToolOutput is what a tool returns to the model.
	ToolOutput = tool.Output
	// ToolOption configures a tool made by NewTool.
	ToolOption = tool.TypedOption
	// Access is a tool's concurrency class: Exclusive (the default),
	// ReadOnly or Mutating.
	Access = tool.Access
	// Outcome is how a turn ended.
	Outcome = loop.Outcome
	// Status says how a turn ended (Outcome.Status).
	Status = loop.Status
	// StopReason says why a turn ended (Outcome.StopReason).
	StopReason = loop.StopReason
	// Event is one event of a turn.
	Event = event.Event
	// EventType names an event (Event.Type).
	EventType = event.Type
	// EventHandler receives a turn's events (Options.Events).
	EventHandler = event.Handler
	// EventFunc adapts a function to an EventHandler.
	EventFunc = event.HandlerFunc
	// Pause is a turn waiting for the user (Outcome.Pause): questions of
	// ask_user, or a call awaiting approval.
	Pause = loop.Pause
	// Answer answers a paused turn (Thread.Answer).
	Answer = loop.Answer
	// QuestionAnswer answers one question of a pause.
	QuestionAnswer = loop.QuestionAnswer
	// Decision answers an approval pause: Approve, ApproveThread or Deny.
	Decision = loop.Decision
	// Waiter answers pauses in process (Options.Waiter).
	Waiter = loop.Waiter
	// Budget holds a turn's optional token, cost and time budgets.
	Budget = loop.Budget
	// Price is a model's price per million tokens.
	Price = loop.Price
)

// Turn statuses (Outcome.Status).
const (
	StatusCompleted   = loop.StatusCompleted
	StatusPaused      = loop.StatusPaused
	StatusInterrupted = loop.StatusInterrupted
	StatusFailed      = loop.StatusFailed
)

// Stop reasons (Outcome.StopReason); README "Stop reasons" says what each
// means.
const (
	StopFinished         = loop.StopFinished
	StopForcedBudget     = loop.StopForcedBudget
	StopForcedTokens     = loop.StopForcedTokens
	StopForcedCost       = loop.StopForcedCost
	StopForcedTime       = loop.StopForcedTime
	StopForcedLoop       = loop.StopForcedLoop
	StopForcedError      = loop.StopForcedError
	StopTerminatedByTool = loop.StopTerminatedByTool
	StopEmptyAnswer      = loop.StopEmptyAnswer
	StopAwaitingUser     = loop.StopAwaitingUser
	StopCancelled        = loop.StopCancelled
	StopProviderError    = loop.StopProviderError
	StopOutputCapped     = loop.StopOutputCapped
)

// Approval decisions (Answer.Decision).
const (
	Approve       = loop.Approve
	ApproveThread = loop.ApproveThread
	Deny          = loop.Deny
)

// Tool access classes (WithAccess).
const (
	Exclusive = tool.Exclusive
	ReadOnly  = tool.ReadOnly
	Mutating  = tool.Mutating
)

// The events a library user most often follows; package event has them all.
const (
	EventTurnStarted    = event.TurnStarted
	EventTurnCompleted  = event.TurnCompleted
	EventRoundStarted   = event.RoundStarted
	EventRoundCompleted = event.RoundCompleted
	EventTextDelta      = event.TextDelta
	EventThinkingDelta  = event.ThinkingDelta
	EventCallCompleted  = event.CallCompleted
	EventToolStarted    = event.ToolStarted
	EventResult         = event.Result
	EventPauseRequested = event.PauseRequested
	EventWarning        = event.Warning
	EventUsage          = event.Usage
)

// NewTool makes a tool from a function of typed arguments: their JSON
// schema comes from In's fields, and a call's arguments are checked against
// it and decoded into In before fn runs (package tool, tool.New).
func NewTool[In any](name, description string, fn func(ctx context.Context, in In) (ToolOutput, error), opts ...ToolOption) Tool {
	return tool.New(name, description, fn, opts...)
}

// WithAccess sets a tool's concurrency class; without it a tool runs alone
// (Exclusive), which is always safe. ReadOnly tools run in parallel.
func WithAccess(a Access) ToolOption { return tool.WithAccess(a) }

// Text is a tool's text output.
func Text(s string) ToolOutput { return tool.Text(s) }

// Options configure an Agent. Model is required.
type Options struct {
	// Model answers the turns: OpenModel opens one from a spec such as
	// "openai:gpt-5-mini"; any llm.Model will do.
	Model Model
	// ModelName is sent as the request's model when the model needs one.
	ModelName string
	// System is the system prompt.
	System string
	// Tools are offered to the model in every turn.
	Tools []Tool
	// MaxRounds is the exploration budget per turn (default 8).
	MaxRounds int
	// MaxOutputTokens caps each model call's output.
	MaxOutputTokens int
	Budget          Budget
	Price           Price
	// Events receives every event of every turn; may be nil.
	Events EventHandler
	// Waiter answers pauses in process; nil ends turns paused.
	Waiter Waiter
	// Engine holds the remaining engine options; the fields above win.
	// Among them: what a tool returns is redacted by default (keys and
	// tokens from the environment and by shape, DESIGN §7.4); set
	// Engine.Redact to redact with more (redact.New), or Engine.NoRedact
	// to turn it off.
	Engine loop.Options
}

// Agent runs turns with one model and one set of tools.
type Agent struct {
	engine *loop.Engine
	// opts are the engine's options, for the engines of structured
	// answers (typed.go), made on first use and kept by answer type.
	opts  loop.Options
	typed sync.Map // reflect.Type → *loop.Engine
}

// New returns an agent, or an error saying which option is wrong.
func New(o Options) (*Agent, error) {
	eo := o.Engine
	eo.Model = o.Model
	if o.ModelName != "" {
		eo.ModelName = o.ModelName
	}
	if o.System != "" {
		eo.System = o.System
	}
	if len(o.Tools) > 0 {
		eo.Tools = tool.NewSet(o.Tools...)
	}
	if o.MaxRounds != 0 {
		eo.MaxRounds = o.MaxRounds
	}
	if o.MaxOutputTokens != 0 {
		eo.MaxOutputTokens = o.MaxOutputTokens
	}
	if o.Budget != (Budget{}) {
		eo.Budget = o.Budget
	}
	if o.Price != (Price{}) {
		eo.Price = o.Price
	}
	if o.Events != nil {
		eo.Events = o.Events
	}
	if o.Waiter != nil {
		eo.Waiter = o.Waiter
	}
	opts := eo
	e, err := loop.New(eo)
	if err != nil {
		return nil, err
	}
	return &Agent{engine: e, opts: opts}, nil
}

// Engine returns the agent's turn engine.
func (a *Agent) Engine() *loop.Engine { return a.engine }

// NewThread starts an in-memory thread: each Run continues the
// conversation with the full item history of the earlier turns.
func (a *Agent) NewThread() *Thread {
	return &Thread{agent: a, id: loop.NewID("thread")}
}

// Run runs one turn of prompt in a fresh thread.
func (a *Agent) Run(ctx context.Context, prompt string) (*Outcome, error) {
	return a.NewThread().Run(ctx, prompt)
}

// Thread is a conversation kept in memory. One turn runs at a time.
type Thread struct {
	agent *Agent
	id    string

	mu       sync.Mutex
	history  []llm.Item
	approved []string
	paused   *loop.State
	// pausedBy is the engine of the paused turn (a structured answer's
	// has its own), which resumes it.
	pausedBy *loop.Engine
	// carry lets the next turn start without copying the history.
	carry *loop.Carry
}

// ID returns the thread id.
func (t *Thread) ID() string { return t.id }

// History returns the thread's items so far; while a turn is paused, with
// that turn's items up to the pause.
func (t *Thread) History() []llm.Item {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paused != nil {
		return t.paused.History
	}
	// Capped: the thread appends to its history in place, and a caller's
	// append must not write there.
	return t.history[:len(t.history):len(t.history)]
}

// ErrPaused is returned by Run when the thread's last turn waits for an
// answer; call Answer first.
var ErrPaused = errors.New("rein: the thread's last turn is paused; answer it with Thread.Answer")

// Run runs one turn of prompt.
func (t *Thread) Run(ctx context.Context, prompt string) (*Outcome, error) {
	return t.run(ctx, t.agent.engine, prompt)
}

// run runs one turn of prompt with engine e.
func (t *Thread) run(ctx context.Context, e *loop.Engine, prompt string) (*Outcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paused != nil {
		return nil, ErrPaused
	}
	out, err := e.Run(ctx, loop.Turn{ThreadID: t.id, History: t.history, Carry: t.carry, Approved: t.approved, Input: []llm.Item{llm.UserText(prompt)}})
	t.keep(e, out)
	return out, err
}

// Answer answers the paused turn and runs it on.
func (t *Thread) Answer(ctx context.Context, a Answer) (*Outcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paused == nil {
		return nil, loop.ErrNotPaused
	}
	e := t.pausedBy
	out, err := e.Resume(ctx, t.paused, a)
	if out == nil {
		return nil, err
	}
	t.keep(e, out)
	return out, err
}

// keep takes in the outcome of a turn engine e ran.
func (t *Thread) keep(e *loop.Engine, out *Outcome) {
	if out == nil {
		return
	}
	t.approved = out.Approved
	if out.State != nil {
		// The history stays that of the turns before: the answered turn's
		// outcome holds all of its items, those before the pause included.
		t.paused, t.pausedBy = out.State, e
		return
	}
	t.paused, t.pausedBy = nil, nil
	// In place: History hands out capped slices, and the engine only
	// reads the history it is given.
	t.history = append(t.history, out.Items...)
	t.carry = out.Carry
}
