// Package task is the task tool (DESIGN §7.3): the model hands a
// self-contained task to a sub-agent, a child turn with a context of its
// own, and gets its answer back as the call's result.
//
// The child is built from the turn that called it (loop.ParentOf): the same
// model and system prompt, a tool set no wider than the parent's, the same
// approval policy and the thread's approvals (so nothing that asked the
// user in the parent runs unasked in the child), budgets carved from what
// the parent has left and its usage charged to the parent's. The call's
// context is the child's, so an interrupt of the parent reaches it. Its
// events reach the parent's stream inside event.Subagent events. A pause
// of the child (an approval, ask_user) is answered in process by the
// parent's Waiter when there is one; otherwise the call pauses the parent
// with the child's pause, and the answer resumes the child (tool.Resumer).
package task

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

// Name is the tool's name.
const Name = "task"

// DefaultMaxDepth is how deep sub-agents nest by default: a turn the user
// started may run children, and they may not run their own.
const DefaultMaxDepth = 1

// MaxRounds is the most rounds a child may ask for; the parent's rounds
// left bound it too.
const MaxRounds = 20

// Timeout is the deadline of one task call: a whole child turn.
const Timeout = 30 * time.Minute

// maxPrompt bounds the task text handed to a child.
const maxPrompt = 32 << 10

// Options configure the tool.
type Options struct {
	// MaxDepth is the deepest a child may be (default DefaultMaxDepth): a
	// turn at depth MaxDepth has no task tool, and a call from deeper is
	// refused.
	MaxDepth int
}

// Tool is the task tool. Bind gives it the turn's tool set, from which it
// tells whether a call's child only reads (and so may run beside other
// calls); without it every call runs alone.
type Tool struct {
	maxDepth int

	mu  sync.Mutex
	set *tool.Set
}

var (
	_ tool.Tool    = (*Tool)(nil)
	_ tool.Keyer   = (*Tool)(nil)
	_ tool.Resumer = (*Tool)(nil)
)

// New returns the task tool.
func New(o Options) *Tool {
	d := o.MaxDepth
	if d <= 0 {
		d = DefaultMaxDepth
	}
	return &Tool{maxDepth: d}
}

// Bind tells the tool the turn's composed tool set, for Keys.
func (t *Tool) Bind(set *tool.Set) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set = set
}

var schema = json.RawMessage(`{"type":"object","properties":{` +
	`"description":{"type":"string","minLength":1,"maxLength":120,"description":"a short name for the task (3 to 8 words), shown to the user"},` +
	`"prompt":{"type":"string","minLength":1,"description":"the whole task: the sub-agent does not see this conversation, so say everything it needs and what its answer should contain"},` +
	`"tools":{"type":"array","items":{"type":"string"},"description":"the tools the sub-agent may use, by name, among yours (default: all of yours)"},` +
	`"read_only":{"type":"boolean","description":"give the sub-agent only tools that change nothing; read-only sub-agents run in parallel"},` +
	`"max_rounds":{"type":"integer","minimum":1,"maximum":20,"description":"the sub-agent's round budget (default: what you have left, at most 8)"}` +
	`},"required":["description","prompt"],"additionalProperties":false}`)

// Spec implements tool.Tool.
func (t *Tool) Spec() tool.Spec {
	return tool.Spec{
		Name: Name,
		Description: "Hand a self-contained task to a sub-agent: a fresh agent with its own context and your tools runs it and returns its answer as this call's result. " +
			"Use it for work that needs many steps whose details you do not need (searching, reading many files, a side investigation); several read-only tasks run in parallel. " +
			"The sub-agent sees only the prompt you write.",
		Schema: schema,
		// Exclusive unless Keys finds the child read-only.
		Access: tool.Exclusive,
		// A child runs rounds of its own, each a model call and its
		// tools: the dispatcher's default deadline for one tool call is
		// too short. The parent's time budget, when it has one, still
		// bounds the child (Left.Time).
		Timeout: Timeout,
	}
}

// input is a call's arguments.
type input struct {
	Description string   `json:"description"`
	Prompt      string   `json:"prompt"`
	Tools       []string `json:"tools,omitempty"`
	ReadOnly    bool     `json:"read_only,omitempty"`
	MaxRounds   int      `json:"max_rounds,omitempty"`
}

// Keys implements tool.Keyer: a child that only has read-only tools
// changes nothing and runs beside other calls; any other runs alone, since
// it may do whatever its tools do.
func (t *Tool) Keys(args json.RawMessage) tool.Keys {
	var in input
	if json.Unmarshal(args, &in) != nil {
		return tool.Keys{Exclusive: true}
	}
	t.mu.Lock()
	set := t.set
	t.mu.Unlock()
	if set == nil {
		return tool.Keys{Exclusive: true}
	}
	tools, err := childTools(set, in, 1, t.maxDepth)
	if err != nil {
		return tool.Keys{Exclusive: true}
	}
	for _, c := range tools {
		if c.Spec().Access != tool.ReadOnly {
			return tool.Keys{Exclusive: true}
		}
	}
	return tool.Keys{}
}

// childTools returns the child's tools: the parent's, less what a child
// may not have (load_tools, which would add to the parent's set; task
// itself below the depth limit), narrowed to in.Tools and to read-only
// tools when asked.
func childTools(parent *tool.Set, in input, childDepth, maxDepth int) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, c := range parent.Tools() {
		name := c.Spec().Name
		switch {
		case name == "load_tools":
			continue
		case name == Name && childDepth >= maxDepth:
			continue
		case len(in.Tools) > 0 && !slices.Contains(in.Tools, name):
			continue
		case in.ReadOnly && c.Spec().Access != tool.ReadOnly && !c.Spec().Pauses:
			continue
		}
		out = append(out, c)
	}
	for _, name := range in.Tools {
		if _, ok := parent.Get(name); !ok || name == "load_tools" || (name == Name && childDepth >= maxDepth) {
			return nil, fmt.Errorf("tools: %q is not one of the tools a sub-agent may have here; choose among: %s", name, strings.Join(names(parent, childDepth, maxDepth), ", "))
		}
	}
	return out, nil
}

func names(set *tool.Set, childDepth, maxDepth int) []string {
	var out []string
	for _, n := range set.Names() {
		if n == "load_tools" || (n == Name && childDepth >= maxDepth) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// subagentPrompt joins the parent's system prompt in a child.
const subagentPrompt = "You are a sub-agent: another agent handed you the task in the user message and will read your final answer; " +
	"no one else sees this conversation. Do the task with your tools, then answer with what was asked for, complete and self-contained."

// child is what a child turn is built from, kept in a paused call's state
// so the answer resumes the same child.
type child struct {
	ThreadID string `json:"thread_id"`
	TurnID   string `json:"turn_id,omitempty"`
	// Link is the parent's call that runs the child, set once the child's
	// thread is kept in the parent's store.
	Link      record.Link `json:"link,omitzero"`
	Tools     []string    `json:"tools"`
	MaxRounds int         `json:"max_rounds"`
	State     *loop.State `json:"state,omitempty"`
	// Charged is what of the child's turn was already charged to the
	// parent's (before a pause): a resumed child's outcome counts its whole
	// turn, and only the rest is charged again.
	Charged charged `json:"charged,omitzero"`
}

// charged is a child's usage, cost and rounds charged to its parent.
type charged struct {
	Usage  llm.Usage `json:"usage,omitzero"`
	Cost   float64   `json:"cost,omitempty"`
	Rounds int       `json:"rounds,omitempty"`
}

// charge charges the parent with what the child's turn spent since it was
// last charged: its tokens and cost, and its rounds against the parent's
// round budget.
func (c *child) charge(p *loop.Parent, out *loop.Outcome) {
	u := out.Usage
	u.InputTokens -= c.Charged.Usage.InputTokens
	u.OutputTokens -= c.Charged.Usage.OutputTokens
	u.CachedInputTokens -= c.Charged.Usage.CachedInputTokens
	u.CacheWriteTokens -= c.Charged.Usage.CacheWriteTokens
	u.ReasoningTokens -= c.Charged.Usage.ReasoningTokens
	p.Charge(u, out.Cost-c.Charged.Cost)
	p.ChargeRounds(out.Rounds - c.Charged.Rounds)
	c.Charged = charged{Usage: out.Usage, Cost: out.Cost, Rounds: out.Rounds}
}

// Run implements tool.Tool.
func (t *Tool) Run(ctx context.Context, call tool.Call) (tool.Output, error) {
	p := loop.ParentOf(ctx)
	if p == nil {
		return failed("task runs only inside a turn of rein's engine"), nil
	}
	var in input
	if err := json.Unmarshal(call.Args, &in); err != nil {
		return failed("task: the arguments are not valid: " + err.Error()), nil
	}
	in.Prompt = strings.TrimSpace(in.Prompt)
	switch {
	case in.Prompt == "":
		return failed("task: prompt is empty; write the whole task for the sub-agent"), nil
	case len(in.Prompt) > maxPrompt:
		return failed(fmt.Sprintf("task: prompt is %d bytes; keep it under %d", len(in.Prompt), maxPrompt)), nil
	case p.Depth()+1 > t.maxDepth:
		return failed(fmt.Sprintf("task: sub-agents nest at most %d deep, and this turn is at depth %d; do the work yourself", t.maxDepth, p.Depth())), nil
	case in.MaxRounds < 0 || in.MaxRounds > MaxRounds:
		return failed(fmt.Sprintf("task: max_rounds %d is out of range; use 1..%d", in.MaxRounds, MaxRounds)), nil
	}
	o := p.Options()
	tools, err := childTools(o.Tools, in, p.Depth()+1, t.maxDepth)
	if err != nil {
		return failed("task: " + err.Error()), nil
	}
	left := p.Left()
	rounds := in.MaxRounds
	if rounds == 0 {
		rounds = loop.DefaultMaxRounds
	}
	c := &child{ThreadID: loop.NewID("thread"), TurnID: loop.NewID("turn"), MaxRounds: min(rounds, left.Rounds)}
	for _, tl := range tools {
		c.Tools = append(c.Tools, tl.Spec().Name)
	}
	k := keeperOf(p)
	if !c.open(ctx, k, p, call.ID, in.Description) {
		k = nil
	}
	eng, err := t.engine(p, o, tools, c, call.ID, k)
	if err != nil {
		return failed("task: " + err.Error()), nil
	}
	input := llm.UserText(in.Prompt)
	out, err := eng.Run(ctx, loop.Turn{ThreadID: c.ThreadID, ID: c.TurnID, Input: []llm.Item{input}, Approved: p.Approved()})
	c.close(ctx, k, out, err)
	return t.result(ctx, p, c, out, err)
}

// Resume implements tool.Resumer: the user answered the child's pause.
func (t *Tool) Resume(ctx context.Context, call tool.Call, state, answer json.RawMessage) (tool.Output, error) {
	p := loop.ParentOf(ctx)
	if p == nil {
		return failed("task runs only inside a turn of rein's engine"), nil
	}
	var c child
	if err := json.Unmarshal(state, &c); err != nil || c.State == nil || c.State.Pause == nil {
		return failed("task: the sub-agent's paused state is damaged; carry on without its answer"), nil
	}
	var a loop.Answer
	if err := json.Unmarshal(answer, &a); err != nil {
		return failed("task: the answer could not be read: " + err.Error()), nil
	}
	// The user answered the parent's call; the child waits on its own.
	a.TurnID, a.CallID = c.State.TurnID, c.State.Pause.CallID
	o := p.Options()
	var tools []tool.Tool
	for _, name := range c.Tools {
		tl, ok := o.Tools.Get(name)
		if !ok {
			return failed(fmt.Sprintf("task: the sub-agent's tool %s is gone from this turn; carry on without its answer", name)), nil
		}
		tools = append(tools, tl)
	}
	var k keeper
	if !c.Link.IsZero() {
		// A child kept as a thread goes on being kept.
		k = keeperOf(p)
		if !c.open(ctx, k, p, call.ID, "") {
			k = nil
		}
	}
	eng, err := t.engine(p, o, tools, &c, call.ID, k)
	if err != nil {
		return failed("task: " + err.Error()), nil
	}
	st := c.State
	c.State = nil
	out, err := eng.Resume(ctx, st, a)
	c.close(ctx, k, out, err)
	return t.result(ctx, p, &c, out, err)
}

// engine builds the child's engine from the parent's options; k, when not
// nil, keeps the child's history in its thread.
func (t *Tool) engine(p *loop.Parent, o loop.Options, tools []tool.Tool, c *child, callID string, k keeper) (*loop.Engine, error) {
	left := p.Left()
	if k != nil {
		o.Journal = k
	}
	o.Tools = tool.NewSet(tools...)
	o.System = strings.TrimSpace(o.System + "\n\n" + subagentPrompt)
	o.MaxRounds = max(1, min(c.MaxRounds, loop.MaxMaxRounds))
	o.Budget = loop.Budget{Tokens: left.Tokens, Cost: left.Cost, Time: left.Time}
	o.Events = event.HandlerFunc(func(e event.Event) {
		switch e.Type {
		case event.TextDelta, event.ThinkingDelta, event.CallDelta:
			// The child's answer reaches the parent as the result; its
			// tokens as they stream are not worth the parent's stream.
			return
		}
		p.Emit(callID, e)
	})
	return loop.New(o)
}

// result turns the child's outcome into the call's: its answer, a failure
// the model can act on, or the child's pause as the call's.
func (t *Tool) result(ctx context.Context, p *loop.Parent, c *child, out *loop.Outcome, err error) (tool.Output, error) {
	if out == nil {
		return failed("task: the sub-agent did not start: " + errText(err)), nil
	}
	c.charge(p, out)
	meta, _ := json.Marshal(map[string]any{
		"thread_id": c.ThreadID, "turn_id": out.TurnID, "status": out.Status, "stop_reason": out.StopReason,
		"rounds": out.Rounds, "usage": out.Usage, "cost": out.Cost,
	})
	switch out.Status {
	case loop.StatusCompleted:
		return tool.Output{Text: out.Answer, Meta: meta}, nil
	case loop.StatusInterrupted:
		if ctx.Err() != nil {
			return tool.Output{Text: out.Answer, Meta: meta}, ctx.Err()
		}
		return tool.Output{Text: "task: the sub-agent was interrupted before it answered", Failed: true, Meta: meta}, nil
	case loop.StatusPaused:
		c.State = out.State
		state, merr := json.Marshal(c)
		if merr != nil || out.Pause == nil {
			return failed("task: the sub-agent paused, and its state could not be kept"), nil
		}
		return tool.Output{Text: "(waiting for the user: the sub-agent asks)", Meta: meta, Pause: childPause(out.Pause, state)}, nil
	}
	return tool.Output{Text: fmt.Sprintf("task: the sub-agent failed (%s): %s", out.StopReason, errText(err)), Failed: true, Meta: meta}, nil
}

// childPause is the child's pause as the parent's call's: the same
// questions, or the child's call awaiting approval named as such.
func childPause(cp *loop.Pause, state json.RawMessage) *tool.Pause {
	tp := &tool.Pause{Kind: cp.Kind, Intro: cp.Intro, Questions: cp.Questions, Resume: state}
	if cp.Kind == tool.PauseApproval {
		tp.Payload, _ = json.Marshal(map[string]string{"tool": cp.Tool, "args": cp.Args, "via": Name})
		if tp.Intro == "" {
			tp.Intro = "A sub-agent asks to run " + cp.Tool
		}
	}
	return tp
}

func failed(msg string) tool.Output { return tool.Output{Text: msg, Failed: true} }

func errText(err error) string {
	if err == nil {
		return "no detail"
	}
	return err.Error()
}
