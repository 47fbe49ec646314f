package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tui"
)

func newChatCmd() *cobra.Command {
	var f turnFlags
	var thread string
	cmd := &cobra.Command{
		Use:   "chat [--thread ID] [flags]",
		Short: "Chat in the terminal: streamed answers, tool cards, steer, queue and interrupt",
		Long: "chat runs turns of a thread in the terminal with the same model, tools and budgets as run.\n" +
			"Enter sends; while a turn runs, Enter steers it (the text joins the running turn before its\n" +
			"next model call), Tab queues the text as the next turn, and Esc interrupts the turn (twice\n" +
			"within a second while a tool runs). Ctrl-C quits. /help lists the commands.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageError(err)
			}
			if f.json {
				return usageError(errors.New("--json is for rein run; chat is interactive"))
			}
			if !isTerminal(os.Stdin) || !isTerminal(cmd.OutOrStdout()) {
				return usageError(errors.New("chat needs a terminal; for one turn without one, use rein run"))
			}
			spec, err := chooseModel(f.model)
			if err != nil {
				return usageError(err)
			}
			r, err := provider.Resolve(spec, provider.Config{BaseURL: f.baseURL, NoStream: f.noStream})
			if err != nil {
				return usageError(err)
			}
			model := r.Model
			dir, err := f.workspaceDir()
			if err != nil {
				return usageError(err)
			}
			ws, err := sandbox.Open(dir)
			if err != nil {
				return usageError(fmt.Errorf("workspace: %w", err))
			}
			defer ws.Close()

			o := f.options()
			o.Model = model
			o.ModelName = spec.Model
			if spec.Provider == "scripted" {
				o.ModelName = ""
			}
			if err := applyCaps(&o, &turnSetup{flags: &f, spec: spec, caps: &r.Caps}); err != nil {
				return usageError(err)
			}
			st, err := openStore(cmd.Context(), f.db)
			if err != nil {
				return err
			}
			defer st.Close()
			f.tools.approval = f.approval
			f.tools.st = st
			mcpm, err := startMCP(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return usageError(err)
			}
			if mcpm != nil {
				defer mcpm.Close()
			}
			f.tools.mcp = mcpm
			set, _, capability, err := composeTools(cmd.Context(), ws, &f.tools, cmd.ErrOrStderr())
			if err != nil {
				return usageError(err)
			}
			o.Tools = set
			if capability != nil && capability.Prompt != "" {
				o.System = strings.TrimSpace(o.System + "\n\n" + capability.Prompt)
			}
			o.System = joinPrompt(o.System, f.tools.loaded.prompt(cmd.Context(), set, cmd.ErrOrStderr()))

			keep := &storeKeeper{st: st, workspace: dir, model: spec.String(), settings: store.Settings{Approval: f.approval, MaxRounds: f.maxRounds, Instructions: f.system}}
			be, err := tui.NewLocal(o, keep)
			if err != nil {
				return usageError(err)
			}
			// Closing the backend interrupts a turn still running and waits
			// for it (its end is stored), so nothing outlives the command.
			defer be.Close()
			err = tui.Run(cmd.Context(), be, tui.Options{Model: spec.String(), Thread: thread}, os.Stdin, cmd.OutOrStdout())
			if errors.Is(err, tui.ErrNoThread) {
				return usageError(fmt.Errorf("--thread %s: no such thread in %s (rein sessions list shows them)", thread, st.Path()))
			}
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&thread, "thread", "", "continue the thread ID")
	return cmd
}

// storeKeeper keeps the chat's threads in the store, so `rein chat
// --thread`, /threads and /resume reach every thread, and `rein sessions`
// shows the chat's.
type storeKeeper struct {
	st        *store.Store
	workspace string
	model     string
	settings  store.Settings
}

func (k *storeKeeper) Record(ctx context.Context, threadID string, it llm.Item) error {
	return k.st.Record(ctx, threadID, it)
}

func (k *storeKeeper) CreateThread(ctx context.Context) (tui.ThreadInfo, error) {
	t, err := k.st.CreateThread(ctx, store.Thread{Workspace: k.workspace, Model: k.model, Settings: k.settings})
	if err != nil {
		return tui.ThreadInfo{}, err
	}
	return threadInfo(t), nil
}

func (k *storeKeeper) LoadThread(ctx context.Context, id string) (tui.Kept, error) {
	snap, err := k.st.Load(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return tui.Kept{}, fmt.Errorf("thread %s: %w", id, tui.ErrNoThread)
	}
	if err != nil {
		return tui.Kept{}, err
	}
	return tui.Kept{Info: threadInfo(snap.Thread), History: snap.Items, Approved: snap.Thread.Settings.Approved}, nil
}

func (k *storeKeeper) ListThreads(ctx context.Context) ([]tui.ThreadInfo, error) {
	ts, _, err := k.st.Threads(ctx, 50, "")
	if err != nil {
		return nil, err
	}
	out := make([]tui.ThreadInfo, len(ts))
	for i, t := range ts {
		out[i] = threadInfo(t)
	}
	return out, nil
}

func (k *storeKeeper) StartTurn(ctx context.Context, threadID string) (string, error) {
	t, err := k.st.StartTurn(ctx, threadID, "")
	if errors.Is(err, store.ErrPaused) {
		return "", fmt.Errorf("%w; answer it with rein answer %s", err, threadID)
	}
	return t.ID, err
}

func (k *storeKeeper) FinishTurn(ctx context.Context, o *loop.Outcome) error {
	return k.st.FinishTurn(ctx, o)
}

func threadInfo(t store.Thread) tui.ThreadInfo {
	return tui.ThreadInfo{ID: t.ID, Title: t.Title, Created: t.Created, Updated: t.Updated, Turns: t.Turns}
}
