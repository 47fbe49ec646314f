package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
)

// A thread keeps its settings (DESIGN §9): the workspace, model, approval
// policy and sandbox mode it was started with are its own, so a turn on it
// runs with them from any directory and through any door. adopt sets the
// flags a command did not give from the thread th, and refuses a
// workspace, approval policy or sandbox mode that contradicts it, saying
// what the thread has and how to go on. Another --model runs the one turn
// of run or answer, and says so (modelPerTurn); chat, whose turns all run
// on the thread's model, refuses it too.
func (f *turnFlags) adopt(cmd *cobra.Command, th record.Thread, modelPerTurn bool) error {
	changed := cmd.Flags().Changed
	contradicts := func(flag, given, kept string) error {
		return fmt.Errorf("--%s %s: thread %s keeps %s %s; drop --%s to continue it, or start a new thread with rein run --%s %s PROMPT",
			flag, given, th.ID, flag, kept, flag, flag, given)
	}
	if th.Settings.Workspace != "" {
		if !changed("workspace") {
			f.workspace = th.Settings.Workspace
		} else if abs, err := filepath.Abs(f.workspace); err != nil || filepath.Clean(abs) != filepath.Clean(th.Settings.Workspace) {
			return contradicts("workspace", f.workspace, th.Settings.Workspace)
		}
	}
	if th.Settings.Model != "" {
		if !changed("model") {
			f.model = th.Settings.Model
		} else if spec, err := provider.ParseSpec(f.model); err == nil && spec.String() != th.Settings.Model {
			if !modelPerTurn {
				return contradicts("model", f.model, th.Settings.Model)
			}
			// Another model for one turn is safe and explicit: the history
			// is the thread's whatever answers it. Said, not silent.
			fmt.Fprintf(cmd.ErrOrStderr(), "rein: thread %s runs on %s; this turn runs on %s, as --model asks\n", th.ID, th.Settings.Model, spec)
		}
	}
	if a := th.Settings.Approval; a != "" {
		if !changed("approval") {
			f.approval = a
		} else if f.approval != a {
			return contradicts("approval", f.approval, a)
		}
	}
	if m := th.Settings.Sandbox; m != "" {
		if !changed("sandbox") {
			f.tools.sandbox = m
		} else if given, err := sandbox.ParseMode(f.tools.sandbox); err != nil || string(given) != m {
			return contradicts("sandbox", f.tools.sandbox, m)
		}
	}
	return nil
}

// threadSettings reads the record of the thread id names (its id or a
// unique prefix of it) from the store at db ("" for the default), for a
// command that continues it; the caller goes on with the record's full id.
func threadSettings(ctx context.Context, db, id string) (record.Thread, error) {
	st, err := openStore(ctx, db)
	if err != nil {
		return record.Thread{}, err
	}
	defer st.Close()
	th, err := st.FindThread(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return record.Thread{}, usageError(fmt.Errorf("--thread %s: no such thread in %s (rein sessions list shows them)", id, st.Path()))
	}
	if errors.Is(err, store.ErrAmbiguous) {
		return record.Thread{}, usageError(fmt.Errorf("--thread: %w", err))
	}
	return th, err
}
