package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/store"
)

// listCmd is the `list` of kb, memory and notes: read a list from the
// store, print it as JSON (--json; an empty list is []), or say empty, or
// write it as text.
func listCmd[T any](short, jsonWhat, empty string, db *string,
	fetch func(*store.Store, context.Context) ([]T, error), text func(io.Writer, []T) error) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), *db)
			if err != nil {
				return err
			}
			defer st.Close()
			xs, err := fetch(st, cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if xs == nil {
					xs = []T{}
				}
				return json.NewEncoder(out).Encode(xs)
			}
			if len(xs) == 0 {
				fmt.Fprintln(out, empty)
				return nil
			}
			return text(out, xs)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the "+jsonWhat+" as JSON")
	return cmd
}
