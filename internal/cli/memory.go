package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/memory"
)

func newMemoryCmd() *cobra.Command {
	var db string
	var sf scopeFlags
	cmd := &cobra.Command{
		Use:   "memory list|add|rm",
		Short: "The memory the agent keeps across threads (read_memory, write_memory): the workspace's and the user's",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	sf.register(cmd)

	list := listCmd("List the memory's entries with their ids, each marked workspace or user", "entries", "the memory is empty", &db,
		func(st *store.Store, ctx context.Context) ([]store.Memory, error) {
			scopes, err := sf.scopes()
			if err != nil {
				return nil, err
			}
			return st.Memories(ctx, scopes)
		},
		func(out io.Writer, ms []store.Memory) error {
			// A model wrote the entries: shown, never obeyed.
			_, err := fmt.Fprintln(out, termtext.Visible(memory.Format(ms)))
			return err
		})

	add := &cobra.Command{
		Use:   "add TEXT...",
		Short: "Save an entry, as write_memory does (to the workspace's memory unless --scope user)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, err := sf.target()
			if err != nil {
				return err
			}
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			text := strings.TrimSpace(strings.Join(args, " "))
			if err := memory.CheckText(text); err != nil {
				return usageError(err)
			}
			m, dup, err := st.AddMemory(cmd.Context(), scope, text)
			if err != nil {
				return usageError(err)
			}
			if dup {
				fmt.Fprintf(cmd.OutOrStdout(), "already saved as %s (%s)\n", m.ID, store.ScopeName(m.Workspace))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved as %s (%s)\n", m.ID, store.ScopeName(m.Workspace))
			return nil
		},
	}

	rm := &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove entries by id (m1, m2, …) of this workspace's memory or the user's",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scopes, err := sf.scopes()
			if err != nil {
				return err
			}
			return removeEach(cmd, db, args, func(st *store.Store, ctx context.Context, id string) error {
				return st.DeleteMemory(ctx, scopes, id)
			})
		},
	}
	cmd.AddCommand(list, add, rm)
	return cmd
}
