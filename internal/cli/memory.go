package cli

import (
	"encoding/json"
	"fmt"
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

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the memory's entries with their ids",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			ms, err := st.Memories(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if ms == nil {
					ms = []store.Memory{}
				}
				return json.NewEncoder(out).Encode(ms)
			}
			if len(ms) == 0 {
				fmt.Fprintln(out, "the memory is empty")
				return nil
			}
			fmt.Fprintln(out, memory.Format(ms))
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")

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
