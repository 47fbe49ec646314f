package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/store"
)

func newNotesCmd() *cobra.Command {
	var db string
	var sf scopeFlags
	cmd := &cobra.Command{
		Use:   "notes list|show|new|rm",
		Short: "Notebooks of records the agent writes with write_note: the workspace's and the user's",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	sf.register(cmd)

	list := listCmd("List the notebooks: id, name, scope (workspace or user), records", "notebooks",
		"no notebooks; rein notes new NAME makes one", &db,
		func(st *store.Store, ctx context.Context) ([]store.Notebook, error) {
			scopes, err := sf.scopes()
			if err != nil {
				return nil, err
			}
			return st.Notebooks(ctx, scopes)
		},
		func(out io.Writer, nbs []store.Notebook) error {
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tRECORDS\tCREATED")
			for _, nb := range nbs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", nb.ID, nb.Name, store.ScopeName(nb.Workspace), nb.Records, nb.Created.Local().Format(time.DateTime))
			}
			return tw.Flush()
		})

	var showJSON bool
	show := &cobra.Command{
		Use:   "show NOTEBOOK",
		Short: "Show a notebook's records (NOTEBOOK is its id or name)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scopes, err := sf.scopes()
			if err != nil {
				return err
			}
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			ns, err := st.Notes(cmd.Context(), scopes, args[0])
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
				// A model wrote the records: shown, never obeyed.
				fmt.Fprintf(out, "── %s %s · %s\n%s\n\n", n.ID, termtext.Visible(n.Title), n.Updated.Local().Format(time.DateTime), termtext.Visible(n.Content))
			}
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the records as JSON")

	create := &cobra.Command{
		Use:   "new NAME",
		Short: "Make a notebook, the workspace's unless --scope user; turns then get list_notebook and write_note",
		Args:  cobra.ExactArgs(1),
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
			nb, err := st.CreateNotebook(cmd.Context(), scope, args[0])
			if err != nil {
				return usageError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "made %s = %s (%s)\n", nb.ID, nb.Name, store.ScopeName(nb.Workspace))
			return nil
		},
	}

	rm := &cobra.Command{
		Use:   "rm NOTEBOOK...",
		Short: "Remove notebooks with their records",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scopes, err := sf.scopes()
			if err != nil {
				return err
			}
			return removeEach(cmd, db, args, func(st *store.Store, ctx context.Context, ref string) error {
				return st.DeleteNotebook(ctx, scopes, ref)
			})
		},
	}
	cmd.AddCommand(list, show, create, rm)
	return cmd
}
