package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/tool"
)

// turnFlags are the flags of run and chat (DESIGN §13).
type turnFlags struct {
	model     string
	baseURL   string
	workspace string
	maxRounds int
	maxTokens int64
	maxOutput int
	maxCost   float64
	timeout   time.Duration
	json      bool
	events    string
	system    string
	noStream  bool
	approval  string
	tools     toolFlags
	db        string
	// reasoningEffort and parallel are request settings over the config
	// file's (provider.Config.Request); fl tells whether parallel was given.
	reasoningEffort string
	parallel        bool
	fl              *pflag.FlagSet
}

func (f *turnFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "PROVIDER:MODEL (openai, openai-chat, anthropic, deepseek, scripted:PATH), or a model name that tells its provider (gpt-5, o3, claude-sonnet-4-5, deepseek-chat); default: the first provider whose key is set")
	fl.StringVar(&f.baseURL, "base-url", "", "the provider's base URL (e.g. http://127.0.0.1:8080/v1 for a local OpenAI-compatible server)")
	fl.StringVarP(&f.workspace, "workspace", "C", "", "the directory the file tools may use (default: the current directory)")
	fl.IntVar(&f.maxRounds, "max-rounds", 0, fmt.Sprintf("exploration budget in rounds, 1..%d (default %d)", loop.MaxMaxRounds, loop.DefaultMaxRounds))
	fl.Int64Var(&f.maxTokens, "max-tokens", 0, "the turn's token budget: input + output summed over its rounds")
	fl.IntVar(&f.maxOutput, "max-output", 0, "output tokens per model call")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "the turn's cost budget in USD (needs a price for the model)")
	fl.DurationVar(&f.timeout, "timeout", 0, "the turn's wall-clock budget, e.g. 2m")
	fl.BoolVar(&f.json, "json", false, "print events as JSON Lines, then the outcome")
	fl.StringVar(&f.events, "events", "", "also write the turn's events to FILE as JSON Lines (for rein trace)")
	fl.StringVar(&f.system, "system", "", "the system prompt")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask the provider for whole responses instead of streams")
	fl.StringVar(&f.reasoningEffort, "reasoning-effort", "", "reasoning_effort for the model, over the config file's (OpenAI protocols): "+strings.Join(config.ReasoningEfforts, ", "))
	fl.BoolVar(&f.parallel, "parallel-tool-calls", true, "let the model make several calls in one response; =false asks for one at a time, over the config file's parallel_tool_calls")
	f.fl = fl
	f.tools.register(cmd)
	fl.StringVar(&f.db, "db", "", dbFlagUsage)
	fl.StringVar(&f.approval, "approval", "on-request", "when calls wait for your approval: never (refused instead), on-request (tools marked risky), untrusted (everything but read-only tools)")
}

// check validates the flags before anything runs.
func (f *turnFlags) check() error {
	switch {
	case f.maxRounds < 0 || f.maxRounds > loop.MaxMaxRounds:
		return fmt.Errorf("--max-rounds %d: use 1..%d", f.maxRounds, loop.MaxMaxRounds)
	case f.maxTokens < 0:
		return fmt.Errorf("--max-tokens %d: must not be negative", f.maxTokens)
	case f.maxOutput < 0:
		return fmt.Errorf("--max-output %d: must not be negative", f.maxOutput)
	case f.maxCost < 0:
		return fmt.Errorf("--max-cost %g: must not be negative", f.maxCost)
	case f.timeout < 0:
		return fmt.Errorf("--timeout %s: must not be negative", f.timeout)
	}
	if _, err := tool.ParsePolicy(f.approval); err != nil {
		return fmt.Errorf("--approval: %w", err)
	}
	if _, err := f.tools.sandboxMode(); err != nil {
		return err
	}
	return nil
}

// workspaceDir returns the absolute workspace directory, which must exist;
// an error names --workspace.
func (f *turnFlags) workspaceDir() (string, error) {
	abs, err := agent.WorkspaceDir(f.workspace)
	return abs, flagError(err)
}

func (f *turnFlags) options() loop.Options {
	return loop.Options{
		MaxRounds:       f.maxRounds,
		MaxOutputTokens: f.maxOutput,
		System:          f.system,
		Budget:          loop.Budget{Tokens: f.maxTokens, Cost: f.maxCost, Time: f.timeout},
		Policy:          tool.Policy(f.approval),
	}
}

// request returns the request settings the flags give.
func (f *turnFlags) request() config.Request {
	var r config.Request
	if f.reasoningEffort != "" {
		r.ReasoningEffort = &f.reasoningEffort
	}
	if f.fl != nil && f.fl.Changed("parallel-tool-calls") {
		r.ParallelToolCalls = &f.parallel
	}
	return r
}

// providerConfig is what provider.Resolve reads besides the spec: the
// flags, the config file cfg, and warnw for what the user should know about
// the model while it runs (a switch to text tool mode).
func (f *turnFlags) providerConfig(cfg *config.File, warnw io.Writer) provider.Config {
	return provider.Config{BaseURL: f.baseURL, NoStream: f.noStream, File: cfg, Request: f.request(), Warn: warnTo(warnw)}
}

// warnTo returns a provider warning hook that prints to w.
func warnTo(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(w, "rein: warning: %s\n", msg) }
}

// flagError says a library error in the command's words: the flag that
// sets what the runtime refused (agent's errors name settings, not flags).
func flagError(err error) error {
	if pe, ok := errors.AsType[*agent.PriceError](err); ok {
		if pe.Unknowable {
			return fmt.Errorf("--max-cost needs a price for %s, and none is known; drop --max-cost, or budget the turn with --max-tokens or --timeout", pe.Spec)
		}
		return fmt.Errorf("--max-cost needs a price for %s; set one in the config file (rein models shows what is known)", pe.Spec)
	}
	if se, ok := errors.AsType[*agent.SettingError](err); ok {
		return fmt.Errorf("--%s %w", se.Setting, se.Err)
	}
	return err
}
