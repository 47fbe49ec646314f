package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/mcp"
	"github.com/reinhq/rein/tui"
	"github.com/reinhq/rein/undo"
)

func newChatCmd() *cobra.Command {
	var f turnFlags
	var thread string
	var cont, resume bool
	var schema string
	cmd := &cobra.Command{
		Use:   "chat [--thread ID | --continue | --resume] [flags]",
		Short: "Chat in the terminal: streamed answers, tool cards, steer, queue and interrupt",
		Long: "chat runs turns of a thread in the terminal with the same model, tools and budgets as run.\n" +
			"Enter sends and Shift+Enter (or Ctrl+J) starts a new line; while a turn runs, Enter steers it\n" +
			"(the text joins the running turn before its next model call), Tab queues the text as the next\n" +
			"turn, and Esc interrupts the turn (twice within a second while a tool runs). Ctrl-C interrupts\n" +
			"a turn and, pressed again or when idle, quits. Up and Down recall earlier inputs, / lists the\n" +
			"commands and @ completes a workspace path.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageError(err)
			}
			if f.json {
				return usageError(errors.New("--json is for rein run; chat is interactive"))
			}
			var output *llm.Output
			if schema != "" {
				var err error
				if output, err = tui.ReadSchema(schema); err != nil {
					return usageError(fmt.Errorf("--schema: %w", err))
				}
			}
			if cont || resume {
				if thread != "" || (cont && resume) {
					return usageError(errors.New("--thread, --continue and --resume each choose the thread; give one"))
				}
				dir, err := f.workspaceDir()
				if err != nil {
					return usageError(err)
				}
				interactive := isTerminal(os.Stdin) && isTerminal(cmd.OutOrStdout())
				c, err := chooseThread(cmd.Context(), f.db, dir, resume, interactive, cmd.InOrStdin(), cmd.OutOrStdout())
				if err != nil || c.done {
					return err
				}
				thread = c.thread
			}
			if thread != "" {
				// Checked before the terminal: a flag that contradicts the
				// thread is wrong wherever chat runs.
				th, err := threadSettings(cmd.Context(), f.db, thread)
				if err != nil {
					return err
				}
				thread = th.ID // a prefix given: the thread it names
				if err := f.adopt(cmd, th, false); err != nil {
					return usageError(err)
				}
			}
			if !isTerminal(os.Stdin) || !isTerminal(cmd.OutOrStdout()) {
				return usageError(errors.New("chat needs a terminal; for one turn without one, use rein run"))
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			spec, err := chooseModel(f.model, cfg)
			if err != nil {
				return usageError(err)
			}
			// Opened here only to refuse a model that cannot run before the
			// screen is taken; each thread opens its own for its turns.
			r, err := provider.Resolve(spec, f.providerConfig(cfg, cmd.ErrOrStderr()))
			if err != nil {
				return usageError(err)
			}
			o := f.options()
			if err := agent.ApplyModel(&o, spec, &r.Caps, cfg); err != nil {
				return usageError(flagError(err))
			}
			dir, err := f.workspaceDir()
			if err != nil {
				return usageError(err)
			}
			return chat(cmd, &f, cfg, spec, dir, thread, output)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&thread, "thread", "", "continue the thread ID (or a unique prefix of it)")
	cmd.Flags().BoolVarP(&cont, "continue", "c", false, "continue the workspace's most recent thread")
	cmd.Flags().BoolVarP(&resume, "resume", "r", false, "pick one of the workspace's threads to continue (without a terminal: list them)")
	cmd.Flags().StringVar(&schema, "schema", "", "answer the turns as JSON matching the JSON Schema in FILE (an object schema), shown as a code block; /schema off goes back to text")
	return cmd
}

// chat runs the chat on the session scheduler over the store, its threads'
// runs built as rein serve builds them (serveBackend) with the chat's flags
// as the defaults: the threads it creates record the model, workspace,
// instructions and approval, so a resumed thread runs as it ran, and
// steered input is stored before the steer returns. file is the config
// file, read once.
func chat(cmd *cobra.Command, f *turnFlags, file *config.File, spec provider.Spec, dir, thread string, output *llm.Output) error {
	ctx := cmd.Context()
	st, err := openStore(ctx, f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	mcpm, err := startMCP(ctx, cmd.ErrOrStderr(), file)
	if err != nil {
		return usageError(err)
	}
	if mcpm != nil {
		defer mcpm.Close()
	}
	b, cfg := chatBackend(f, file, spec, dir, st, mcpm, cmd.ErrOrStderr())
	sched, stop, err := b.runtime(ctx, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	// Interrupts a turn still running and waits for it (its end and trace
	// are stored), so nothing outlives the command.
	defer stop()
	// Composed now, so that a tool flag that cannot work is refused before
	// the screen is taken; the chat's threads share the set.
	if err := b.agent().Prepare(ctx, session.Thread{Settings: cfg}); err != nil {
		return usageError(flagError(err))
	}
	// The chat's own view of the workspace (@ completion, the approval
	// box's diffs), through the sandbox with the config's deny list.
	ws, err := openWorkspace(dir, sandboxOptions(file))
	if err != nil {
		return usageError(err)
	}
	defer ws.Close()
	be := tui.NewSession(sched, tui.SessionOptions{Config: cfg, Threads: func(ctx context.Context) ([]tui.ThreadInfo, error) {
		ts, _, err := st.Threads(ctx, 50, "")
		if err != nil {
			return nil, err
		}
		out := make([]tui.ThreadInfo, len(ts))
		for i, t := range ts {
			out[i] = threadInfo(t)
		}
		return out, nil
	}})
	opts := tui.Options{Model: spec.String(), Thread: thread, Workspace: ws, Dir: cfg.Workspace, History: chatHistory(dir, cmd.ErrOrStderr()), Schema: output,
		Models: configuredModels(file, spec.String()),
		SetModel: func(ctx context.Context, threadID, model string) error {
			return b.agent().SwitchModel(ctx, threadID, model)
		},
		Changes: func(ctx context.Context, threadID string) (string, error) {
			items, err := st.Items(ctx, threadID)
			return tui.Changes(items), err
		},
		// The runtime's undo, every door's: a file changed after the
		// turn is never overwritten unless the user says force.
		Undo: func(ctx context.Context, threadID string, force bool) (string, error) {
			r, err := agent.Undo(ctx, st, threadID, agent.UndoOptions{Force: force, Sandbox: sandboxOptions(file)})
			if ce, ok := errors.AsType[*undo.ConflictError](err); ok {
				return "", fmt.Errorf("%w: %w", tui.ErrChangedSince, ce)
			}
			if err != nil {
				return "", err
			}
			return r.Summary(), nil
		},
	}
	if mcpm != nil {
		opts.MCP = func(context.Context) string { return describeMCP(mcpm) }
	}
	err = tui.Run(ctx, be, opts, os.Stdin, cmd.OutOrStdout())
	if errors.Is(err, tui.ErrNoThread) {
		return usageError(fmt.Errorf("--thread %s: no such thread in %s (rein sessions list shows them)", thread, st.Path()))
	}
	return err
}

func threadInfo(t record.Thread) tui.ThreadInfo {
	return tui.ThreadInfo{ID: t.ID, Title: t.Title, Created: t.Created, Updated: t.Updated, Turns: t.Turns,
		Workspace: t.Settings.Workspace, Model: t.Settings.Model}
}

// chatHistory opens the workspace's input history; without one (no state
// directory, a file that cannot be read) the chat remembers only its own
// inputs, and says so.
func chatHistory(dir string, logw io.Writer) *tui.History {
	path, err := tui.HistoryPath(dir)
	if err == nil {
		var h *tui.History
		if h, err = tui.OpenHistory(path); err == nil {
			return h
		}
	}
	fmt.Fprintf(logw, "rein: input history off: %v\n", err)
	return nil
}

// describeMCP is /mcp's text: each server, whether it is trusted, and its
// tools or why it was left out.
func describeMCP(m *mcp.Manager) string {
	var b strings.Builder
	for i, s := range m.Status() {
		if i > 0 {
			b.WriteString("\n")
		}
		trust := "untrusted"
		if s.Trusted {
			trust = "trusted"
		}
		if s.Err != nil {
			fmt.Fprintf(&b, "✗ %s (%s): %v", s.Name, trust, s.Err)
			continue
		}
		fmt.Fprintf(&b, "✓ %s (%s): %d tools", s.Name, trust, s.Tools)
	}
	if names := m.Names(); len(names) > 0 {
		b.WriteString("\ntools: " + strings.Join(names, ", "))
	}
	return b.String()
}

// chatBackend returns the backend of the chat's runs, the chat's flags as
// its defaults, and the config of the threads the chat creates.
func chatBackend(f *turnFlags, file *config.File, spec provider.Spec, dir string, st *store.Store, mcpm *mcp.Manager, logw io.Writer) (*serveBackend, session.ThreadConfig) {
	o := f.options()
	b := &serveBackend{
		f:   &serveFlags{model: spec.String(), baseURL: f.baseURL, approval: f.approval, maxRounds: f.maxRounds, request: f.request()},
		dir: dir, logw: logw, cfg: file, st: st, mcp: mcpm, noStream: f.noStream,
		base:    loop.Options{MaxOutputTokens: o.MaxOutputTokens, Budget: o.Budget},
		compose: &f.tools,
	}
	cfg := session.ThreadConfig{Workspace: dir, Model: spec.String(), Instructions: f.system, EnableTools: f.tools.enabled,
		DisableTools: f.tools.suppressed, ForceTools: f.tools.forced, Approval: f.approval, MaxRounds: f.maxRounds, KBs: f.tools.kbs}
	return b, cfg
}

// configuredModels are the models the config file names, as
// provider:model, for /model's picker: the current one first, then the
// default, each provider's listed models and each model table (not the
// provider:* ones), sorted.
func configuredModels(f *config.File, current string) []string {
	var out []string
	add := func(s string) {
		if s != "" && !strings.HasSuffix(s, ":*") && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(current)
	if f == nil {
		return out
	}
	add(f.Model)
	for name, p := range f.Providers {
		for m := range p.Models {
			add(name + ":" + m)
		}
	}
	for m := range f.Models {
		add(m)
	}
	if len(out) > 1 {
		slices.Sort(out[1:])
	}
	return out
}
