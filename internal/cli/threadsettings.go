package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/store"
)

// adopt sets the flags a command did not give from the thread th's settings
// (agent.Continue: a thread keeps its workspace, model, approval policy and
// sandbox mode), and refuses a flag that contradicts them, saying what the
// thread has and how to go on. Another --model runs the one turn of run or
// answer, and says so (modelPerTurn); chat, whose turns all run on the
// thread's model, refuses it too.
func (f *turnFlags) adopt(cmd *cobra.Command, th record.Thread, modelPerTurn bool) error {
	changed := cmd.Flags().Changed
	var asked record.Settings
	if changed("workspace") {
		asked.Workspace = f.workspace
	}
	if changed("model") {
		asked.Model = f.model
	}
	if changed("approval") {
		asked.Approval = f.approval
	}
	if changed("sandbox") {
		asked.Sandbox = f.tools.sandbox
	}
	s, other, err := agent.Continue(th, asked, modelPerTurn)
	if ce, ok := errors.AsType[*agent.ConflictError](err); ok {
		return fmt.Errorf("--%s %s: thread %s keeps %s %s; drop --%s to continue it, or start a new thread with rein run --%s %s PROMPT",
			ce.Setting, ce.Given, ce.Thread, ce.Setting, ce.Kept, ce.Setting, ce.Setting, ce.Given)
	}
	if err != nil {
		return err
	}
	if err := f.adoptKBs(changed("kb"), th); err != nil {
		return err
	}
	if other {
		// Said, not silent.
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: thread %s runs on %s; this turn runs on %s, as --model asks\n", th.ID, th.Settings.Model, mustSpec(s.Model))
	}
	if s.Workspace != "" {
		f.workspace = s.Workspace
	}
	if s.Model != "" {
		f.model = s.Model
	}
	if s.Approval != "" {
		f.approval = s.Approval
	}
	if s.Sandbox != "" {
		f.tools.sandbox = s.Sandbox
	}
	return nil
}

// adoptKBs gives the command the knowledge bases of the thread th it
// continues, and refuses a --kb (given) that names others: a thread keeps
// its bases, as its workspace.
func (f *turnFlags) adoptKBs(given bool, th record.Thread) error {
	if !given {
		f.tools.kbs = th.Settings.KBs
		return nil
	}
	if slices.Equal(f.tools.kbs, th.Settings.KBs) {
		return nil
	}
	kept := "no knowledge base"
	if len(th.Settings.KBs) > 0 {
		kept = "--kb " + strings.Join(th.Settings.KBs, " --kb ")
	}
	asked := strings.Join(f.tools.kbs, " --kb ")
	return fmt.Errorf("--kb %s: thread %s keeps %s; drop --kb to continue it, or start a new thread with rein run --kb %s PROMPT", asked, th.ID, kept, asked)
}

// mustSpec is the canonical spelling of a model spec that parsed.
func mustSpec(model string) string {
	if spec, err := provider.ParseSpec(model); err == nil {
		return spec.String()
	}
	return model
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
