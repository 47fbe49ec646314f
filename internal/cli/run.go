package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
)

func newRunCmd() *cobra.Command {
	var f turnFlags
	var thread string
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run one turn and stream the answer",
		Long: "Run one turn of PROMPT with the workspace's file tools and stream the answer.\n" +
			"Exit codes: 0 completed, 1 failed, 2 usage or configuration error, 3 paused (awaiting the user), 130 interrupted.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return usageError(err)
			}
			prompt := strings.TrimSpace(strings.Join(args, " "))
			if prompt == "" {
				return usageError(errors.New("the prompt is empty; say what the agent should do"))
			}
			if thread != "" {
				th, err := threadSettings(cmd.Context(), f.db, thread)
				if err != nil {
					return err
				}
				if err := f.adopt(cmd, th, true); err != nil {
					return usageError(err)
				}
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			spec, err := chooseModel(f.model, cfg)
			if err != nil {
				return usageError(err)
			}
			r, err := provider.Resolve(spec, f.providerConfig(cfg, cmd.ErrOrStderr()))
			if err != nil {
				return usageError(err)
			}
			dir, err := f.workspaceDir()
			if err != nil {
				return usageError(err)
			}
			return runTurn(cmd, turnSetup{flags: &f, cfg: cfg, spec: spec, model: r.Model, caps: &r.Caps, dir: dir, prompt: prompt, thread: thread})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&thread, "thread", "", "continue the thread ID: its history, approved tools, workspace, model, approval policy and sandbox mode")
	return cmd
}

// chooseModel returns the spec of --model, or of the config file cfg's
// model, or of the first provider with a key. A nil cfg reads the file.
func chooseModel(flag string, cfg *config.File) (provider.Spec, error) {
	if flag != "" {
		return provider.ParseSpec(flag)
	}
	return provider.Default(provider.Config{File: cfg})
}

// turnSetup is what a turn needs, whoever starts it (run, answer, demo).
type turnSetup struct {
	flags *turnFlags
	// cfg is the config file, read once by the command: its MCP servers
	// and its [sandbox] table (the workspace's deny list, the limits of
	// commands).
	cfg    *config.File
	spec   provider.Spec
	model  llm.Model
	dir    string
	prompt string
	// header is printed before the turn in human mode.
	header []string
	// thread continues a stored thread; "" starts a new one.
	thread string
	// answer answers the thread's paused turn (rein answer), which then
	// goes on; nil runs a new turn of prompt.
	answer *loop.Answer
	// st is the store already opened (rein answer); nil opens it from the
	// flags.
	st *store.Store
	// caps are the model's capabilities, when a real provider runs it:
	// its price (the cost budget) and its context window (the guard).
	caps *provider.Capabilities
}

// runTurn runs one turn — a new one, or the paused one answered — as a
// one-shot client of the session runtime: the turn is claimed, journaled,
// traced, watched and recorded by a session.Scheduler, as chat's and
// serve's turns are; runTurn maps the flags to the run's options, renders
// its events as text or JSON Lines, and returns an exit code error for
// anything but a completed turn.
func runTurn(cmd *cobra.Command, s turnSetup) error {
	out := cmd.OutOrStdout()
	box := sandboxOptions(s.cfg)
	ws, err := openWorkspace(s.dir, box)
	if err != nil {
		return usageError(err)
	}
	defer ws.Close()

	o := s.flags.options()
	o.Redact = agent.NewSecrets(s.cfg).Redactor(s.dir)
	o.Model = s.model
	o.ModelName = s.spec.Name()
	if err := agent.ApplyModel(&o, s.spec, s.caps, s.cfg); err != nil {
		return usageError(err)
	}
	// The store comes first: the knowledge tools and their gates read it.
	st := s.st
	if st == nil {
		if st, err = openStore(cmd.Context(), s.flags.db); err != nil {
			return err
		}
		defer st.Close()
	}

	s.flags.tools.approval = s.flags.approval
	s.flags.tools.st = st
	s.flags.tools.sandboxOpts = box
	if s.cfg != nil {
		s.flags.tools.webSearch = s.cfg.WebSearch
	}
	s.flags.tools.ownSearch = s.caps != nil && s.caps.WebSearch
	m, err := startMCP(cmd.Context(), cmd.ErrOrStderr(), s.cfg)
	if err != nil {
		return usageError(err)
	}
	if m != nil {
		defer m.Close()
	}
	s.flags.tools.mcp = m
	set, _, capability, err := composeTools(cmd.Context(), ws, &s.flags.tools, cmd.ErrOrStderr())
	if err != nil {
		return usageError(err)
	}
	o.Tools = set
	if capability != nil && capability.Prompt != "" {
		o.System = strings.TrimSpace(o.System + "\n\n" + capability.Prompt)
	}
	k := s.flags.tools.loaded
	o.System = agent.JoinPrompt(o.System, k.Prompt(cmd.Context(), set, cmd.ErrOrStderr()))

	var h *human
	var jl *jsonLines
	if s.flags.json {
		jl = newJSONLines(out)
		o.Events = jl
	} else {
		h = newHuman(out, isTerminal(out))
		o.Events = h
		for _, l := range s.header {
			h.line(l)
		}
		h.line(h.bold("> ") + s.prompt)
		h.line("")
	}
	// Refused here, as a usage error, rather than as a failed turn.
	if _, err := loop.New(o); err != nil {
		return usageError(err)
	}
	// --events and OpenTelemetry watch the turn beside its output (trace.go).
	rec, err := newRecorders(cmd.Context(), s.flags.events, s.spec)
	if err != nil {
		return usageError(err)
	}
	defer rec.close(cmd.ErrOrStderr())
	sched, err := session.New(session.Config{
		Store: session.NewSQLStore(st),
		Setup: func(context.Context, session.Thread) (loop.Options, func(), error) { return o, nil, nil },
		// The trace, the spans and the knowledge seed are the runtime's,
		// attached to every run as to chat's and serve's.
		Traces: st,
		Events: rec.handler,
		Input: func(ctx context.Context, th session.Thread, o loop.Options, turnID string, in []llm.Item) []llm.Item {
			return k.SeedInput(ctx, o.Tools, th.ID, turnID, in, o.Events)
		},
		// A one-shot turn is the model's whole work: a script must have
		// been played to its end.
		Verify: true,
	})
	if err != nil {
		return err
	}
	defer closeRuntime(sched)

	ctx := cmd.Context()
	thread := s.thread
	var turn session.Turn
	if s.answer != nil {
		turn, err = sched.AnswerTurn(ctx, thread, *s.answer)
	} else {
		if thread == "" {
			th, err := sched.CreateThread(ctx, record.Settings{
				Workspace: s.dir, Model: s.spec.String(), Approval: s.flags.approval, Sandbox: s.flags.tools.sandbox,
				MaxRounds: s.flags.maxRounds, Instructions: s.flags.system,
			})
			if err != nil {
				return err
			}
			thread = th.ID
		}
		turn, err = sched.RunTurn(ctx, thread, llm.UserText(s.prompt))
	}
	if err != nil {
		return turnError(ctx, sched, thread, err)
	}
	// On a terminal a pause is answered there and the same turn goes on.
	if !s.flags.json && isTerminal(os.Stdin) && isTerminal(out) {
		w := &termWaiter{in: os.Stdin, out: out}
		for turn.Status == session.TurnPaused && turn.Pause != nil && ctx.Err() == nil {
			a, err := w.Wait(ctx, *turn.Pause)
			if err != nil {
				break
			}
			next, err := sched.AnswerTurn(ctx, thread, a)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rein: the answer was not taken: %v\n", err)
				break
			}
			turn = next
		}
	}
	outcome := turnOutcome(turn)
	if jl != nil {
		jl.outcome(outcome)
	} else {
		h.summary(outcome)
		reportThread(cmd.ErrOrStderr(), outcome)
	}
	switch outcome.Status {
	case loop.StatusCompleted:
		return nil
	case loop.StatusPaused:
		return exitCode(ExitPaused)
	case loop.StatusInterrupted:
		return exitCode(ExitInterrupted)
	}
	return exitCode(ExitFailed)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var _ event.Handler = (*human)(nil)
