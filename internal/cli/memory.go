package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/memory"
)

func newMemoryCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "memory list|add|rm",
		Short: "The memory the agent keeps across threads (read_memory, write_memory)",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)

	list := listCmd("List the memory's entries with their ids", "entries", "the memory is empty", &db, (*store.Store).Memories,
		func(out io.Writer, ms []store.Memory) error {
			_, err := fmt.Fprintln(out, memory.Format(ms))
			return err
		})

	add := &cobra.Command{
		Use:   "add TEXT...",
		Short: "Save an entry, as write_memory does",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			m, dup, err := st.AddMemory(cmd.Context(), strings.Join(args, " "))
			if err != nil {
				return usageError(err)
			}
			if dup {
				fmt.Fprintf(cmd.OutOrStdout(), "already saved as %s\n", m.ID)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved as %s\n", m.ID)
			return nil
		},
	}

	rm := &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove entries by id (m1, m2, …)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeEach(cmd, db, args, (*store.Store).DeleteMemory)
		},
	}
	cmd.AddCommand(list, add, rm)
	return cmd
}
