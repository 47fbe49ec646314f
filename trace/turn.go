// Package trace rebuilds what happened in a turn from its events (package
// event) and writes it as one self-contained HTML page: a timeline of the
// rounds with the model calls and tool calls as bars, waits on the user,
// retries, tokens and cost per round, the settlement and forced rounds
// marked, and the answer.
package trace

import (
	"strings"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// Turn is one turn as its events tell it.
type Turn struct {
	ID       string
	ThreadID string
	Start    time.Time
	End      time.Time
	// Resumed says the events begin after a pause, not at turn_started.
	Resumed bool
	// Prompt is the text of the user's input items.
	Prompt     string
	Status     string
	StopReason string
	Answer     string
	Error      string
	Usage      llm.Usage
	Cost       float64
	Rounds     []*Round
	Waits      []*Wait
	// Warnings are those not about one round (settlement, forced finish).
	Warnings []Warning
	// Done says turn_completed was seen; without it the events stop mid-turn.
	Done bool
}

// Round is one model call and the tool calls it made.
type Round struct {
	N     int
	Phase llm.Phase
	// Role is narration (the round made calls) or finish.
	Role string
	// Finish is the finish reason; "" when no final response came.
	Finish string
	Start  time.Time
	// ModelEnd is when the model's stream ended.
	ModelEnd time.Time
	End      time.Time
	// Text is the round's visible text: a preamble, or the answer.
	Text     string
	Thinking int // bytes of reasoning streamed
	Usage    llm.Usage
	Cost     float64
	Calls    []*Call
	Retries  []Retry
	Warnings []Warning
}

// Failed reports whether the model call gave no final response.
func (r *Round) Failed() bool { return r.Finish == "" }

// Call is one tool call of a round.
type Call struct {
	ID    string
	Name  string
	Index int
	Args  string
	// Written is when the model finished writing the call.
	Written time.Time
	// Start and End bound the tool's run; Start is zero when the call never
	// ran (refused, a duplicate, not started).
	Start  time.Time
	End    time.Time
	Status string
	Result string
	// Subagents are the child turns the call ran (the task tool), from
	// the subagent events that carried their events; each has its own
	// rounds, tokens and cost.
	Subagents []*Turn
}

// Ran reports whether the tool ran.
func (c *Call) Ran() bool { return !c.Start.IsZero() }

// Wait is a pause for the user: an ask_user question or an approval.
type Wait struct {
	CallID string
	Tool   string
	Kind   string
	Start  time.Time
	End    time.Time
	// Answer is the decision or reply; Open says the turn ended waiting.
	Answer string
	Open   bool
}

// Retry is a retried model request.
type Retry struct {
	Time    time.Time
	Attempt int
	Max     int
	Delay   time.Duration
	Message string
}

// Warning is a warning event.
type Warning struct {
	Time    time.Time
	Code    string
	Message string
}

// Turns groups events into turns, in the order their first events appear.
// Events of one turn may be interleaved with another's.
func Turns(events []event.Event) []*Turn {
	var (
		out  []*Turn
		open = map[string]*builder{}
	)
	for _, e := range events {
		b, ok := open[e.TurnID]
		if !ok {
			b = &builder{t: &Turn{ID: e.TurnID, ThreadID: e.ThreadID, Start: e.Time, Resumed: e.Type != event.TurnStarted}}
			open[e.TurnID] = b
			out = append(out, b.t)
		}
		b.add(e)
	}
	for _, t := range out {
		open[t.ID].finish()
	}
	return out
}

// builder folds one turn's events into a Turn.
type builder struct {
	t     *Turn
	round *Round
	text  strings.Builder
	calls map[string]*Call
	usage llm.Usage // cumulative, at the last usage event
	cost  float64
	// sub holds the events of the child turns of each call, by call id,
	// and subCalls the calls in the order their first child event came.
	sub      map[string][]event.Event
	subCalls []*Call
}

func (b *builder) add(e event.Event) {
	t := b.t
	if e.Time.After(t.End) {
		t.End = e.Time
	}
	switch e.Type {
	case event.Subagent:
		if e.Sub == nil {
			break
		}
		if b.sub == nil {
			b.sub = map[string][]event.Event{}
		}
		if _, ok := b.sub[e.CallID]; !ok {
			b.subCalls = append(b.subCalls, b.subCall(e))
		}
		b.sub[e.CallID] = append(b.sub[e.CallID], *e.Sub)
	case event.RoundStarted:
		b.closeRound(e.Time)
		b.round = &Round{N: e.Round, Phase: e.Phase, Start: e.Time}
		b.calls = map[string]*Call{}
		t.Rounds = append(t.Rounds, b.round)
	case event.TextDelta:
		if b.round != nil {
			b.text.WriteString(e.Delta)
		}
	case event.ThinkingDelta:
		if b.round != nil {
			b.round.Thinking += len(e.Delta)
		}
	case event.CallCompleted:
		c := b.call(e)
		c.Written, c.Args, c.Index = e.Time, e.Args, e.Index
	case event.ToolStarted:
		c := b.call(e)
		c.Start = e.Time
		if c.Args == "" {
			c.Args = e.Args
		}
	case event.Result:
		c := b.call(e)
		c.End, c.Status, c.Result = e.Time, e.Status, e.Content
		if c.Start.IsZero() && e.Duration > 0 {
			c.Start = e.Time.Add(-time.Duration(e.Duration * float64(time.Millisecond)))
		}
	case event.ItemAdded:
		if e.Item == nil {
			break
		}
		switch {
		case e.Item.Role == llm.RoleAssistant && b.round != nil && b.round.ModelEnd.IsZero():
			b.round.ModelEnd = e.Time
		case e.Item.Role == llm.RoleUser && e.Item.Origin == llm.OriginInput && b.round == nil && len(t.Rounds) == 0:
			t.Prompt = strings.TrimSpace(t.Prompt + "\n" + itemText(e.Item))
		}
	case event.Retry:
		if b.round != nil {
			b.round.Retries = append(b.round.Retries, Retry{Time: e.Time, Attempt: e.Attempt, Max: e.Max,
				Delay: time.Duration(e.Duration * float64(time.Millisecond)), Message: e.Content})
		}
	case event.RoundCompleted:
		if r := b.round; r != nil {
			r.Role, r.Finish, r.End = e.Role, e.Code, e.Time
			if r.ModelEnd.IsZero() {
				r.ModelEnd = e.Time
			}
		}
	case event.Usage:
		if e.Usage != nil {
			if r := b.round; r != nil {
				r.Usage = sub(*e.Usage, b.usage)
				r.Cost = e.Cost - b.cost
			}
			b.usage, b.cost = *e.Usage, e.Cost
			t.Usage, t.Cost = b.usage, b.cost
		}
		b.closeRound(e.Time)
	case event.Warning:
		w := Warning{Time: e.Time, Code: e.Code, Message: e.Content}
		if b.round != nil {
			b.round.Warnings = append(b.round.Warnings, w)
		} else {
			t.Warnings = append(t.Warnings, w)
		}
	case event.PauseRequested:
		b.closeRound(e.Time)
		w := &Wait{CallID: e.CallID, Tool: e.Name, Start: e.Time}
		if e.Pause != nil {
			w.Kind = string(e.Pause.Kind)
		}
		t.Waits = append(t.Waits, w)
	case event.PauseResolved:
		answer := firstNonEmpty(e.Status, e.Content)
		found := false
		for _, w := range t.Waits {
			if w.CallID == e.CallID && w.End.IsZero() {
				w.End, w.Answer, found = e.Time, answer, true
			}
		}
		if !found {
			// A resumed turn: the wait began in an earlier process.
			t.Waits = append(t.Waits, &Wait{CallID: e.CallID, Tool: e.Name, Start: e.Time, End: e.Time, Answer: answer})
		}
	case event.TurnCompleted:
		b.closeRound(e.Time)
		t.Done, t.Status, t.StopReason = true, e.Status, e.Code
		if s := e.Turn; s != nil {
			t.Answer, t.Error = s.Answer, s.Error
			t.Usage, t.Cost = s.Usage, s.Cost
		}
	}
}

// call returns the call e is about, adding it to the round.
func (b *builder) call(e event.Event) *Call {
	if c, ok := b.calls[e.CallID]; ok {
		return c
	}
	c := &Call{ID: e.CallID, Name: e.Name, Index: e.Index}
	if b.calls == nil {
		b.calls = map[string]*Call{}
	}
	b.calls[e.CallID] = c
	if b.round != nil {
		b.round.Calls = append(b.round.Calls, c)
	}
	return c
}

// subCall returns the call a subagent event is about: the round's, or,
// for a child resumed after its round ended (an answered pause), one found
// in an earlier round, or else a call of its own.
func (b *builder) subCall(e event.Event) *Call {
	if c, ok := b.calls[e.CallID]; ok {
		return c
	}
	for _, r := range b.t.Rounds {
		for _, c := range r.Calls {
			if c.ID == e.CallID {
				return c
			}
		}
	}
	return &Call{ID: e.CallID, Name: "task"}
}

// closeRound ends the open round: it keeps its text, and gives times to
// what the events left open (a stream that never opened).
func (b *builder) closeRound(at time.Time) {
	r := b.round
	if r == nil {
		return
	}
	b.round = nil
	r.Text = b.text.String()
	b.text.Reset()
	if r.ModelEnd.IsZero() {
		r.ModelEnd = at
	}
	if r.End.IsZero() {
		r.End = at
	}
}

// finish closes what the last event left open.
func (b *builder) finish() {
	t := b.t
	for _, c := range b.subCalls {
		c.Subagents = Turns(b.sub[c.ID])
	}
	b.closeRound(t.End)
	for _, w := range t.Waits {
		if w.End.IsZero() {
			w.End, w.Open = t.End, true
		}
	}
	for _, r := range t.Rounds {
		for _, c := range r.Calls {
			if c.Ran() && c.End.IsZero() {
				c.End = r.End
			}
		}
	}
}

func sub(a, b llm.Usage) llm.Usage {
	return llm.Usage{
		InputTokens:       a.InputTokens - b.InputTokens,
		OutputTokens:      a.OutputTokens - b.OutputTokens,
		CachedInputTokens: a.CachedInputTokens - b.CachedInputTokens,
		CacheWriteTokens:  a.CacheWriteTokens - b.CacheWriteTokens,
		ReasoningTokens:   a.ReasoningTokens - b.ReasoningTokens,
	}
}

func itemText(it *llm.Item) string {
	var sb strings.Builder
	for _, p := range it.Parts {
		if p.Kind == llm.PartText {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
