package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/store"
)

func newNotesCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "notes list|show|new|rm",
		Short: "Notebooks of records the agent writes with write_note",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)

	list := listCmd("List the notebooks: id, name, records", "notebooks",
		"no notebooks; rein notes new NAME makes one", &db, (*store.Store).Notebooks,
		func(out io.Writer, nbs []store.Notebook) error {
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tRECORDS\tCREATED")
			for _, nb := range nbs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", nb.ID, nb.Name, nb.Records, nb.Created.Local().Format(time.DateTime))
			}
			return tw.Flush()
		})

	var showJSON bool
	show := &cobra.Command{
		Use:   "show NOTEBOOK",
		Short: "Show a notebook's records (NOTEBOOK is its id or name)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			ns, err := st.Notes(cmd.Context(), args[0])
			if err != nil {
				return notFound(err)
			}
			out := cmd.OutOrStdout()
			if showJSON {
				if ns == nil {
					ns = []store.Note{}
				}
				return json.NewEncoder(out).Encode(ns)
			}
			if len(ns) == 0 {
				fmt.Fprintln(out, "no records yet")
			}
			for _, n := range ns {
				fmt.Fprintf(out, "── %s %s · %s\n%s\n\n", n.ID, n.Title, n.Updated.Local().Format(time.DateTime), n.Content)
			}
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the records as JSON")

	create := &cobra.Command{
		Use:   "new NAME",
		Short: "Make a notebook; turns then get list_notebook and write_note",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			nb, err := st.CreateNotebook(cmd.Context(), args[0])
			if err != nil {
				return usageError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "made %s = %s\n", nb.ID, nb.Name)
			return nil
		},
	}

	rm := &cobra.Command{
		Use:   "rm NOTEBOOK...",
		Short: "Remove notebooks with their records",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeEach(cmd, db, args, (*store.Store).DeleteNotebook)
		},
	}
	cmd.AddCommand(list, show, create, rm)
	return cmd
}
