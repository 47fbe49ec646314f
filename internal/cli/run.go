package cli

import (
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
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func newRunCmd() *cobra.Command {
	var f turnFlags
	var thread string
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT|-",
		Short: "Run one turn and stream the answer",
		Long: "Run one turn of PROMPT with the workspace's file tools and stream the answer.\n" +
			"With - as the prompt, or none and standard input not a terminal, the prompt is read from standard input.\n" +
			"Exit codes: 0 completed, 1 failed, 2 usage or configuration error, 3 paused (awaiting the user), 130 interrupted.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return usageError(err)
			}
			prompt, err := promptOf(args, cmd.InOrStdin())
			if err != nil {
				return usageError(err)
			}
			if thread != "" {
				th, err := threadSettings(cmd.Context(), f.db, thread)
				if err != nil {
					return err
				}
				thread = th.ID // a prefix given: the thread it names
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

// turnSetup is what a turn needs, whoever starts it (run, demo).
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
	tools  []tool.Tool // nil: the workspace's file tools
	// header is printed before the turn in human mode.
	header []string
	// thread continues a stored thread; "" starts a new one.
	thread string
	// persist is the store and thread already opened (rein answer); nil
	// opens them from the flags.
	persist *persisted
	// caps are the model's capabilities, when a real provider runs it:
	// its price (the cost budget) and its context window (the guard).
	caps *provider.Capabilities
}

// runTurn runs one turn and reports it as text or JSON Lines, returning an
// exit code error for anything but a completed turn.
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
	o.ModelName = s.spec.Model
	if s.spec.Provider == "scripted" {
		o.ModelName = ""
	}
	if err := agent.ApplyModel(&o, s.spec, s.caps, s.cfg); err != nil {
		return usageError(err)
	}
	// The store comes first: the knowledge tools and their gates read it.
	p, err := openPersisted(cmd.Context(), &s)
	if err != nil {
		return err
	}
	defer p.close()
	o.Journal = p.st

	if s.tools != nil {
		o.Tools = tool.NewSet(s.tools...)
	} else {
		s.flags.tools.approval = s.flags.approval
		s.flags.tools.st = p.st
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
		o.System = agent.JoinPrompt(o.System, s.flags.tools.loaded.Prompt(cmd.Context(), set, cmd.ErrOrStderr()))
	}

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
	if !s.flags.json && isTerminal(os.Stdin) && isTerminal(out) {
		o.Waiter = &termWaiter{in: os.Stdin, out: out}
	}
	// --events and OpenTelemetry watch the turn beside its output (trace.go).
	rec, err := newRecorders(cmd.Context(), s.flags.events, s.spec)
	if err != nil {
		return usageError(err)
	}
	defer rec.close(cmd.ErrOrStderr())
	tk := &session.TraceKeeper{}
	o.Events = event.Multi(o.Events, rec.handler, tk)
	engine, err := loop.New(o)
	if err != nil {
		return usageError(err)
	}
	ctx := cmd.Context()
	prompt := s.prompt
	if k := s.flags.tools.loaded; k != nil && p.resume == nil {
		// The first user message of the turn carries the knowledge seed.
		prompt = k.Seed(ctx, o.Tools, prompt, p.thread.ID, "", o.Events)
	}
	outcome, err := p.run(ctx, engine, prompt)
	if err != nil {
		return err
	}
	if sm, ok := s.model.(*scripted.Model); ok && outcome.Status == loop.StatusCompleted {
		if err := sm.Verify(); err != nil {
			outcome.Status, outcome.Err = loop.StatusFailed, fmt.Errorf("the script did not go as written: %w", err)
		}
	}
	if err := p.finish(ctx, outcome); err != nil {
		return err
	}
	if err := tk.Keep(ctx, p.st, p.thread.ID); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: the turn's trace was not kept: %v\n", err)
	}
	if jl != nil {
		jl.outcome(outcome)
	} else {
		h.summary(outcome)
		p.report(cmd.ErrOrStderr(), outcome)
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
