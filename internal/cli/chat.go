package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/sandbox"
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
			model, err := provider.Open(spec, provider.Config{BaseURL: f.baseURL, NoStream: f.noStream})
			if err != nil {
				return usageError(err)
			}
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
			f.tools.approval = f.approval
			set, _, capability, err := composeTools(cmd.Context(), ws, &f.tools, cmd.ErrOrStderr())
			if err != nil {
				return usageError(err)
			}
			o.Tools = set
			if capability != nil && capability.Prompt != "" {
				o.System = strings.TrimSpace(o.System + "\n\n" + capability.Prompt)
			}

			be, err := tui.NewMemory(o)
			if err != nil {
				return usageError(err)
			}
			// Closing the backend interrupts a turn still running and waits
			// for it, so nothing outlives the command.
			defer be.Close()
			err = tui.Run(cmd.Context(), be, tui.Options{Model: spec.String(), Thread: thread}, os.Stdin, cmd.OutOrStdout())
			if errors.Is(err, tui.ErrNotStored) {
				return usageError(fmt.Errorf("--thread %s: %w; start without --thread", thread, err))
			}
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&thread, "thread", "", "continue the thread ID")
	return cmd
}
