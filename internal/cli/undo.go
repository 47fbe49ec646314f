package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
)

func newUndoCmd() *cobra.Command {
	var db, turn string
	var force bool
	cmd := &cobra.Command{
		Use:   "undo THREAD [--turn ID] [--force]",
		Short: "Revert the files a turn of THREAD wrote: its latest turn with changes, or --turn",
		Long: "undo puts back, in the thread's workspace, the files a turn wrote through write_file and\n" +
			"edit_file as they were before it, and removes the files it created. A file changed after the\n" +
			"turn (its content no longer what the turn left) is never overwritten: undo refuses and lists\n" +
			"them, restoring nothing, unless --force. Run it again to undo the turn before. Commands the\n" +
			"turn ran with exec are not tracked file by file; undo says so and leaves what they did.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			st, err := openStore(ctx, db)
			if err != nil {
				return err
			}
			defer st.Close()
			id, err := resolveThread(ctx, st, args[0])
			if err != nil {
				return err
			}
			r, err := agent.Undo(ctx, st, id, agent.UndoOptions{Turn: turn, Force: force, Sandbox: sandboxOptions(cfg)})
			if r != nil {
				out := cmd.OutOrStdout()
				fmt.Fprintln(out, r.Summary())
				for _, p := range r.Restored {
					fmt.Fprintln(out, "  restored", p)
				}
				for _, p := range r.Removed {
					fmt.Fprintln(out, "  removed ", p)
				}
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&turn, "turn", "", "the turn to undo (default: the latest with file changes not undone)")
	cmd.Flags().BoolVar(&force, "force", false, "restore over files changed after the turn (those changes are lost)")
	cmd.Flags().StringVar(&db, "db", "", dbFlagUsage)
	return cmd
}
