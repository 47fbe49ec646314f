package loop

import (
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

// Defaults of the engine (DESIGN §2.2, §3).
const (
	DefaultMaxRounds           = 8
	DefaultMaxSettlementRounds = 3
	DefaultLoopThreshold       = 3
	MaxMaxRounds               = 50
)

// Options configure an Engine. Model is required; everything else has a
// working zero value.
type Options struct {
	Model llm.Model
	// ModelName is passed in each request's Model field.
	ModelName string
	// Tools is the turn's composed tool list; calls to anything else are
	// refused.
	Tools *tool.Set
	// System is the system prompt, byte-stable for the whole turn.
	System string

	// MaxRounds is the exploration budget (default 8, at most 50).
	MaxRounds int
	// MaxSettlementRounds is how many rounds with tools follow a spent
	// exploration budget before the forced final round (default 3). Set
	// NoSettlement for none.
	MaxSettlementRounds int
	NoSettlement        bool
	// MaxCallsPerRound caps the calls run in one round (default 8).
	MaxCallsPerRound int
	// MaxOutputTokens caps each model call's output; 0 leaves the
	// provider's default.
	MaxOutputTokens int
	Temperature     *float64

	// MaxRoundOutput caps, in bytes, what one model call may stream: its
	// visible text, reasoning, and every call's name and arguments (each
	// call counting 256 bytes more). Over it the stream is cut and closed and
	// the turn fails with stop reason output_capped and a *CapError.
	// Default 4 MiB (DefaultMaxRoundOutput); negative for no cap.
	MaxRoundOutput int64
	// MaxCallArgs caps, in bytes, the arguments of one call, cut the same
	// way. Default 1 MiB (DefaultMaxCallArgs); negative for no cap.
	MaxCallArgs int64

	// Output asks for the turn's answer as one JSON object matching a
	// schema (a structured answer; output.go): the finish round asks for
	// it the way the model takes it (OutputMode), the answer is checked
	// against the schema, a wrong one gets one repair round with what was
	// wrong, and the outcome carries it (Outcome.Output). In tool mode a
	// tool named Output.Name is added to Tools: its arguments are the
	// answer.
	Output *llm.Output
	// OutputMode says how the model is asked for Output; empty asks the
	// model (llm.OutputModeOf).
	OutputMode llm.OutputMode

	// Budget holds the optional token, cost and time budgets of a turn.
	Budget Budget
	// Price converts usage to cost; needed for the cost budget.
	Price Price
	// LoopThreshold is how often the same call (name, arguments and
	// result) may be seen in a turn before it moves to settlement
	// (default 3; negative disables loop detection).
	LoopThreshold int

	// ToolTimeouts overrides tool deadlines by name.
	ToolTimeouts map[string]time.Duration
	// DefaultToolTimeout is the deadline of a tool that names none.
	DefaultToolTimeout time.Duration
	// Grace is how long a cancelled tool may run on before it is abandoned
	// (default 2 s).
	Grace time.Duration
	// NoEarlyStart holds every call until the model's stream has ended.
	NoEarlyStart bool
	// Policy is the approval policy (default on-request): which calls
	// pause the turn for the user's approval, and which are refused.
	Policy tool.Policy
	// Redact cleans everything a tool returns (results, errors, partial
	// output) and the engine's own error text before the model, the events
	// or the journal see it (DESIGN §7.4). Nil redacts with redact.Env():
	// the known token shapes and the secret-looking values of the process
	// environment, provider keys among them. A door that knows more (the
	// keys its config file names, the workspace) gives its own.
	Redact func(string) string
	// NoRedact turns redaction off when Redact is nil: for a library user
	// whose tools return nothing secret, or who redacts elsewhere.
	NoRedact bool

	// Events receives the turn's events; may be nil.
	Events event.Handler
	// Waiter answers pauses in process (CLI, TUI); nil ends the turn paused.
	Waiter Waiter
	// PauseTimeout bounds the Waiter; when it passes, the turn ends paused
	// and can be resumed later. 0 waits as long as ctx lives.
	PauseTimeout time.Duration
	// Steer supplies input the user added while the turn runs; it is read
	// before each model request and when a turn is about to finish.
	Steer Inbox
	// Journal records each item as it is produced; nil keeps history in
	// memory only.
	Journal Journal
	// Yield, when not nil, is asked at each round boundary (before the
	// steered input is read and the next model request made); when it
	// says true the run stops there with StopYielded, recording nothing
	// more and announcing no end: the turn is handed over, to go on
	// elsewhere from its committed items (Engine.Continue).
	Yield func() bool
	// Window keeps requests within the model's context window (package
	// window): it counts before each request, shortens or compacts the
	// history at 90 %, caps tool results as they are recorded and reports
	// the budget after each round. Nil sends the history as it is.
	Window Window

	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
}

// Budget holds the optional budgets of a turn. Each one that is spent ends
// the turn through the forced final round with its own stop reason.
type Budget struct {
	// Tokens is input plus output tokens summed over the turn's rounds.
	Tokens int64
	// Cost is in US dollars, from Price.
	Cost float64
	// Time is wall-clock time spent running (not waiting for the user).
	// It is the deadline of every model stream of the turn, so a stream
	// in flight is cut when it runs out; the forced final round that
	// follows may run on for a tenth of Time (at least 1 s, at most 30 s)
	// before it is cut as well.
	Time time.Duration
}

// Price is the model's price per million tokens (llm.Price, where it
// belongs with the model); the name stays for Options.Price's callers.
type Price = llm.Price

// Waiter answers a pause while the turn waits in process.
type Waiter interface {
	// Wait blocks until the user answers or ctx is done (then it returns
	// ctx's error and the turn ends paused, resumable later).
	Wait(ctx context.Context, p Pause) (Answer, error)
}

// Inbox supplies steered input. Drain returns what arrived since the last
// call (nil when nothing did) and must be cheap.
type Inbox interface {
	Drain() []llm.Item
}

// Journal records items as they are produced, so a crash loses nothing
// committed: an assistant item (with its calls) is recorded before the
// results that answer it. An item whose ID was recorded before replaces it
// (only a pause placeholder result is ever replaced, by the answer).
type Journal interface {
	Record(ctx context.Context, threadID string, it llm.Item) error
}

func (o *Options) withDefaults() (Options, error) {
	c := *o
	if c.Model == nil {
		return c, fmt.Errorf("loop: Options.Model is nil; give a model (for tests and demos, llm/scripted)")
	}
	if c.MaxRounds == 0 {
		c.MaxRounds = DefaultMaxRounds
	}
	if c.MaxRounds < 1 || c.MaxRounds > MaxMaxRounds {
		return c, fmt.Errorf("loop: MaxRounds %d is out of range; use 1..%d", c.MaxRounds, MaxMaxRounds)
	}
	if c.NoSettlement {
		c.MaxSettlementRounds = 0
	} else if c.MaxSettlementRounds == 0 {
		c.MaxSettlementRounds = DefaultMaxSettlementRounds
	}
	if c.MaxSettlementRounds < 0 {
		return c, fmt.Errorf("loop: MaxSettlementRounds %d is negative; use 0..3 (NoSettlement for none)", c.MaxSettlementRounds)
	}
	if c.LoopThreshold == 0 {
		c.LoopThreshold = DefaultLoopThreshold
	}
	if c.Budget.Tokens < 0 || c.Budget.Cost < 0 || c.Budget.Time < 0 {
		return c, fmt.Errorf("loop: budgets must not be negative (tokens %d, cost %g, time %s)", c.Budget.Tokens, c.Budget.Cost, c.Budget.Time)
	}
	if c.MaxRoundOutput == 0 {
		c.MaxRoundOutput = DefaultMaxRoundOutput
	}
	if c.MaxCallArgs == 0 {
		c.MaxCallArgs = DefaultMaxCallArgs
	}
	if c.Tools == nil {
		c.Tools = tool.NewSet()
	}
	p, err := tool.ParsePolicy(string(c.Policy))
	if err != nil {
		return c, fmt.Errorf("loop: %w", err)
	}
	c.Policy = p
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Redact == nil && !c.NoRedact {
		c.Redact = redact.Env().Redact
	}
	return c, nil
}
