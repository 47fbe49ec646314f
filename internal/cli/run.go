package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tui"
)

func newRunCmd() *cobra.Command {
	var f turnFlags
	var thread, schema string
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
			var threadOutput []byte
			if thread != "" {
				th, err := threadSettings(cmd.Context(), f.db, thread)
				if err != nil {
					return err
				}
				thread = th.ID // a prefix given: the thread it names
				threadOutput = th.Settings.Output
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
			output, err := readSchema(schema)
			if err != nil {
				return usageError(err)
			}
			if output == nil && len(threadOutput) > 0 {
				// The thread's default (thread/start's output): its turns
				// answer in JSON, printed as --schema prints it.
				if output, err = llm.OutputFromSchema(threadOutput, "answer"); err != nil {
					return usageError(fmt.Errorf("the thread's output schema: %w", err))
				}
			}
			return runTurn(cmd, turnSetup{flags: &f, cfg: cfg, spec: spec, model: r.Model, caps: &r.Caps, dir: dir, prompt: prompt, thread: thread, output: output})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&thread, "thread", "", "continue the thread ID: its history, approved tools, workspace, model, approval policy and sandbox mode")
	cmd.Flags().StringVar(&schema, "schema", "", "ask for the answer as JSON matching the JSON Schema in FILE (an object schema); the JSON is printed on stdout, the turn on stderr")
	return cmd
}

// readSchema reads the structured answer --schema names, or nil without
// one, as the chat's /schema does (a regular file, bounded, a schema that
// compiles).
func readSchema(path string) (*llm.Output, error) {
	if path == "" {
		return nil, nil
	}
	o, err := tui.ReadSchema(path)
	if err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	}
	return o, nil
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
	// output is the structured answer asked for (run --schema), or nil.
	output *llm.Output
	// gone says the thread's store is removed when the command ends (the
	// demo's temporary one): no hint to continue a thread that will not
	// be there.
	gone bool
}

// runTurn runs one turn — a new one, or the paused one answered — as a
// one-shot client of the session runtime: the flags map to an
// agent.RuntimeConfig (the turn's settings forced over the thread's, the
// model already opened), and the turn is claimed, set up, journaled,
// traced, watched and recorded by the same agent.Runtime and
// session.Scheduler as chat's and serve's turns. runTurn renders its
// events as text or JSON Lines and returns an exit code error for
// anything but a completed turn.
func runTurn(cmd *cobra.Command, s turnSetup) error {
	ctx := cmd.Context()
	out, logw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	st := s.st
	if st == nil {
		var err error
		if st, err = openStore(ctx, s.flags.db); err != nil {
			return err
		}
		defer st.Close()
	}
	m, err := startMCP(ctx, logw, s.cfg)
	if err != nil {
		return usageError(err)
	}
	if m != nil {
		defer m.Close()
	}
	x, err := telemetry.FromEnv(ctx, "")
	if err != nil {
		return usageError(err)
	}
	defer shutdownExport(x, logw)

	f := s.flags
	o := f.options()
	// The turn runs as its flags say: for a thread continued, adopt has
	// made them the thread's, but for another --model for this turn.
	// Tools given by flag are this turn's too, whatever the thread chose.
	turn := record.Settings{Workspace: s.dir, Model: s.spec.String(), Approval: f.approval, Sandbox: f.tools.sandbox,
		MaxRounds: f.maxRounds, Instructions: f.system, EnableTools: f.tools.enabled, DisableTools: f.tools.suppressed, ForceTools: f.tools.forced, KBs: f.tools.kbs}
	rt := agent.NewRuntime(agent.RuntimeConfig{
		Store: st, File: s.cfg, Force: turn, MCP: m, Export: x, Log: logw,
		Tools: agent.Tools{Capability: f.tools.capability, Exclusive: f.tools.exclusive, NoExec: !f.tools.exec,
			Enable: f.tools.enabled, Disable: f.tools.suppressed, Force: f.tools.forced, Attach: f.tools.attach},
		Base:     loop.Options{MaxOutputTokens: o.MaxOutputTokens, Budget: o.Budget, Output: s.output},
		Provider: f.providerConfig(s.cfg, logw),
		// Opened already: resolved by the command, or the demo's script.
		Open: func(spec provider.Spec) (*provider.Resolved, error) {
			if spec != s.spec {
				return provider.Resolve(spec, f.providerConfig(s.cfg, logw))
			}
			r := &provider.Resolved{Spec: spec, Model: s.model}
			if s.caps != nil {
				r.Caps = *s.caps
			}
			return r, nil
		},
		Detect: func() sandbox.Report { return detectSandbox() },
	})
	defer rt.Close()

	var h *human
	var jl *jsonLines
	var view event.Handler
	if f.json {
		jl = newJSONLines(out)
		view = jl
	} else {
		hout := out
		if s.output != nil {
			// stdout is the answer's JSON alone; the turn goes to stderr.
			hout = logw
		}
		h = newHuman(hout, isTerminal(hout))
		view = h
	}
	// --events writes the turn's events beside its output (trace.go).
	rec, err := newRecorders(s.flags.events)
	if err != nil {
		return usageError(err)
	}
	defer rec.close(logw)
	c, err := rt.Session()
	if err != nil {
		return err
	}
	c.Events = event.Multi(view, rec.handler)
	// A one-shot turn is the model's whole work: a script must have been
	// played to its end.
	c.Verify = true
	sched, err := session.New(c)
	if err != nil {
		return err
	}
	defer closeRuntime(sched)

	th := record.Thread{ID: s.thread, Settings: turn}
	if s.thread != "" {
		if th, err = sched.ResumeThread(ctx, s.thread); err != nil {
			return turnError(ctx, sched, s.thread, err)
		}
	}
	// Set up now, so that what cannot run is refused as a usage error
	// (before a new thread is made) rather than as a failed turn; the
	// runtime keeps what it built for the run.
	eo, _, err := rt.Setup(ctx, th)
	if err == nil {
		_, err = loop.New(eo)
	}
	if err != nil {
		return usageError(flagError(err))
	}
	if s.thread == "" {
		if th, err = sched.CreateThread(ctx, turn); err != nil {
			return err
		}
	}
	if h != nil {
		for _, l := range s.header {
			h.line(l)
		}
		h.line(h.bold("> ") + s.prompt)
		h.line("")
	}
	var t session.Turn
	if s.answer != nil {
		t, err = sched.AnswerTurn(ctx, th.ID, *s.answer)
	} else {
		t, err = sched.RunTurn(ctx, th.ID, llm.UserText(s.prompt))
	}
	if err != nil {
		return turnError(ctx, sched, th.ID, err)
	}
	// On a terminal a pause is answered there and the same turn goes on.
	if !f.json && isTerminal(os.Stdin) && isTerminal(out) {
		w := &termWaiter{in: os.Stdin, out: out}
		for t.Status == session.TurnPaused && t.Pause != nil && ctx.Err() == nil {
			a, err := w.Wait(ctx, *t.Pause)
			if err != nil {
				break
			}
			next, err := sched.AnswerTurn(ctx, th.ID, a)
			if err != nil {
				fmt.Fprintf(logw, "rein: the answer was not taken: %v\n", err)
				break
			}
			t = next
		}
	}
	outcome := turnOutcome(t)
	if jl != nil {
		jl.outcome(outcome)
	} else {
		h.summary(outcome)
		if s.gone {
			fmt.Fprintf(logw, "thread %s was kept in a temporary store, removed now (--keep keeps it)\n", outcome.ThreadID)
		} else {
			reportThread(logw, outcome)
		}
		if len(outcome.Output) > 0 {
			printJSON(out, outcome.Output)
		}
	}
	if t.StopReason == session.StopStoreError {
		// The turn ran but the store refused its end (a full disk): a
		// failure of rein's, said on stderr whatever the output mode.
		return &exitError{code: ExitFailed, err: errors.New(t.Error)}
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

// printJSON prints a structured answer indented, on a line of its own.
func printJSON(w io.Writer, raw json.RawMessage) {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		b.Reset()
		b.Write(raw)
	}
	b.WriteByte('\n')
	w.Write(b.Bytes())
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var _ event.Handler = (*human)(nil)
