package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/store"
)

// writeFamily tells, after a thread's turns and items, whose sub-agent it
// is and which sub-agents its turns ran (each a thread of its own).
func writeFamily(ctx context.Context, w io.Writer, st *store.Store, th record.Thread) error {
	if l := th.Parent; !l.IsZero() {
		fmt.Fprintf(w, "\nsub-agent of thread %s (turn %s, call %s)\n", l.ThreadID, l.TurnID, l.CallID)
	}
	kids, err := st.Children(ctx, th.ID)
	if err != nil {
		return err
	}
	if len(kids) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nsub-agents (rein sessions show ID, rein trace ID):")
	for _, k := range kids {
		fmt.Fprintf(w, "  %s  call %s  %s\n", k.ID, k.Parent.CallID, shorten(k.Title, 60))
	}
	return nil
}
