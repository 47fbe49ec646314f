package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// dbFlagUsage documents --db the same way on every command that has it.
const dbFlagUsage = "the thread store (default $" + store.EnvPath + ", else $XDG_DATA_HOME/rein/rein.db)"

// openStore opens the store at path (the --db flag; "" for the default),
// as a usage error when it cannot: rein cannot keep threads there.
func openStore(ctx context.Context, path string) (*store.Store, error) {
	if url, ok := postgresURL(path); ok {
		return nil, usageError(fmt.Errorf("%s is a PostgreSQL store: rein serve and rein doctor use one; this command keeps threads in a file: pass --db FILE", redactedURL(url)))
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, usageError(fmt.Errorf("%w (choose another file with --db or %s)", err, store.EnvPath))
	}
	return st, nil
}

// turnError is the exit of a turn the runtime would not start or answer:
// a usage error when the thread cannot take it now (a turn of it runs in
// another process, one waits for an answer, the answer does not fit), a
// failure when the store could not write it (a full disk).
func turnError(ctx context.Context, sched *session.Scheduler, thread string, err error) error {
	var pm *loop.PauseMismatchError
	switch {
	case errors.Is(err, session.ErrTurnPaused):
		call := "?"
		if t, ok, _ := sched.Active(ctx, thread); ok && t.Pause != nil {
			call = t.Pause.CallID
		}
		return usageError(fmt.Errorf("thread %s waits for an answer to call %s; answer it first: rein answer %s TEXT", thread, call, thread))
	case errors.Is(err, session.ErrTurnBusy):
		return usageError(fmt.Errorf("thread %s: %w; wait for it to end", thread, err))
	case errors.Is(err, session.ErrThreadNotFound) || errors.Is(err, loop.ErrNotPaused) || errors.Is(err, loop.ErrNoDecision) || errors.As(err, &pm):
		return usageError(err)
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("the turn could not start: %w", err)}
}

// turnOutcome is the outcome a one-shot turn is rendered from: its record,
// as the runtime stored it.
func turnOutcome(t session.Turn) *loop.Outcome {
	o := &loop.Outcome{
		ThreadID: t.ThreadID, TurnID: t.ID, Status: t.Status, StopReason: t.StopReason, Answer: t.Answer, Output: t.Output,
		Rounds: t.Rounds, SettlementRounds: t.SettlementRounds, ToolSteps: t.ToolSteps,
		Usage: t.Usage, Cost: t.Cost, Pause: t.Pause,
	}
	if t.Error != "" {
		o.Err = errors.New(t.Error)
	}
	return o
}

// closeRuntime closes a one-shot client's scheduler once its turn has
// stopped: nothing of it runs any more, so this does not wait long.
func closeRuntime(sched *session.Scheduler) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sched.Close(ctx)
}

// reportThread tells a person which thread the turn belongs to and how to
// go on.
func reportThread(w io.Writer, out *loop.Outcome) {
	if out.Status == loop.StatusPaused {
		how := "TEXT"
		if out.Pause != nil && out.Pause.Kind == tool.PauseApproval {
			// An approval is answered by a flag; TEXT alone is refused.
			how = "--approve | --approve-thread | --deny [REASON]"
		}
		fmt.Fprintf(w, "thread %s paused; answer with: rein answer %s %s\n", out.ThreadID, out.ThreadID, how)
		return
	}
	fmt.Fprintf(w, "thread %s; continue with: rein run --thread %s PROMPT\n", out.ThreadID, out.ThreadID)
}

func newSessionsCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:     "sessions list|show|rm",
		Aliases: []string{"threads"},
		Short:   "The threads in the store: list them, show one, remove some",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)

	var limit int
	var asJSON, all, children bool
	var workspace string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's threads (--all: every thread), most recently used first: id, updated, turns, title",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			threads, next, err := listThreads(cmd.Context(), st, all, workspace, limit)
			if children {
				// Sub-agents' threads have no workspace of their own.
				all = true
				threads, next, err = st.AllThreads(cmd.Context(), limit, "")
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				// The fields of thread/list's answer, in snake_case
				// (docs/protocol.md).
				res := protocol.ThreadListResult{Threads: make([]protocol.Thread, 0, len(threads)), NextCursor: next}
				for _, t := range threads {
					res.Threads = append(res.Threads, protocol.ThreadOf(t))
				}
				return encodeSnake(out, res)
			}
			if len(threads) == 0 {
				if !all {
					fmt.Fprintln(out, "no threads in this workspace yet; rein run PROMPT starts one (--all lists every workspace's)")
					return nil
				}
				fmt.Fprintln(out, "no threads yet; rein run PROMPT starts one")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUPDATED\tTURNS\tTITLE")
			for _, t := range threads {
				title := shorten(t.Title, 60)
				if !t.Parent.IsZero() {
					title += " (sub-agent of " + t.Parent.ThreadID + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.ID, t.Updated.Local().Format(time.DateTime), t.Turns, title)
			}
			if next != "" {
				fmt.Fprintf(tw, "…\t(more: raise --limit)\t\t\n")
			}
			return tw.Flush()
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, "at most this many threads (0: all)")
	list.Flags().BoolVar(&all, "all", false, "list the threads of every workspace, not only this one's")
	list.Flags().BoolVar(&children, "children", false, "list sub-agents' threads too (every workspace's: a sub-agent's thread has none)")
	list.Flags().StringVarP(&workspace, "workspace", "C", "", "the workspace whose threads to list (default: the current directory)")
	list.Flags().BoolVar(&asJSON, "json", false, "print {threads, next_cursor} as JSON: thread/list's fields in snake_case")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show THREAD",
		Short: "Show a thread's turns and items",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			id := args[0]
			if t, err := st.FindThread(cmd.Context(), id); err == nil {
				id = t.ID
			} else if errors.Is(err, store.ErrAmbiguous) {
				return usageError(err)
			}
			snap, err := st.Load(cmd.Context(), id)
			if errors.Is(err, store.ErrNotFound) {
				return &exitError{code: ExitFailed, err: fmt.Errorf("no thread %s in %s", args[0], st.Path())}
			}
			if err != nil {
				return err
			}
			if showJSON {
				// The thread and turns with the protocol's fields in
				// snake_case, the items whole (docs/protocol.md).
				return encodeSnake(cmd.OutOrStdout(), protocol.ExportOf(snap.Thread, snap.Turns, snap.Items))
			}
			writeSnapshot(cmd.OutOrStdout(), snap)
			return writeFamily(cmd.Context(), cmd.OutOrStdout(), st, snap.Thread)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the thread, its turns and items as JSON (protocol.ThreadExport's fields in snake_case)")

	rm := &cobra.Command{
		Use:   "rm THREAD...",
		Short: "Remove threads with their turns and items",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A prefix names one thread, never several: removing is not
			// undone, so an ambiguous one removes nothing.
			return removeEach(cmd, db, args, func(st *store.Store, ctx context.Context, id string) error {
				t, err := st.FindThread(ctx, id)
				if err != nil {
					return err
				}
				return st.DeleteThread(ctx, t.ID)
			})
		},
	}
	cmd.AddCommand(list, show, rm)
	return cmd
}

// writeSnapshot prints a thread for reading: each turn's status, then its
// items — user input, answers, calls with their arguments, results.
func writeSnapshot(w io.Writer, snap *store.Snapshot) {
	t := snap.Thread
	fmt.Fprintf(w, "thread %s · %s · %s\n", t.ID, t.Settings.Model, t.Settings.Workspace)
	turns := make(map[string]*record.Turn, len(snap.Turns))
	for i := range snap.Turns {
		turns[snap.Turns[i].ID] = &snap.Turns[i]
	}
	current := ""
	for _, it := range snap.Items {
		if it.TurnID != current {
			current = it.TurnID
			head := "turn " + current
			if tn := turns[current]; tn != nil {
				head = fmt.Sprintf("turn %d %s · %s", tn.Seq, tn.ID, tn.Status)
				if tn.StopReason != "" {
					head += " · " + string(tn.StopReason)
				}
				if tn.Pause != nil {
					head += " · waiting on call " + tn.Pause.CallID
				}
			}
			fmt.Fprintf(w, "\n── %s\n", head)
		}
		writeItem(w, it)
	}
}

func writeItem(w io.Writer, it llm.Item) {
	switch it.Role {
	case llm.RoleUser:
		label := map[llm.Origin]string{llm.OriginInput: ">", llm.OriginSteer: "> (steer)", llm.OriginDirective: "[directive]", llm.OriginMarker: "[marker]"}[it.Origin]
		if label == "" {
			label = "[" + it.Origin.String() + "]"
		}
		fmt.Fprintf(w, "%s %s\n", label, indent(termtext.Visible(strings.TrimSpace(it.Text()))))
	case llm.RoleAssistant:
		if text := strings.TrimSpace(it.Text()); text != "" {
			fmt.Fprintf(w, "%s\n", indent(termtext.Visible(text)))
		}
		for _, c := range it.Calls() {
			fmt.Fprintf(w, "  → %s %s  [%s]\n", termtext.Visible(c.Name), summarizeArgs(c.Args, 100), termtext.Visible(c.ID))
		}
	case llm.RoleTool:
		if r := it.Result(); r != nil {
			status := string(r.Status)
			if status == "" {
				status = string(llm.ResultOK)
			}
			fmt.Fprintf(w, "  ← %s %s: %s\n", termtext.Visible(r.Name), status, termtext.Visible(summarizeResult(r.Content, 200)))
		}
	}
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// removeEach is the rm of sessions, kb, memory and notes: it removes each
// named thing from the store, says so, and fails (exit 1) naming every one
// it could not remove, after trying them all.
func removeEach(cmd *cobra.Command, db string, names []string, remove func(*store.Store, context.Context, string) error) error {
	st, err := openStore(cmd.Context(), db)
	if err != nil {
		return err
	}
	defer st.Close()
	var errs []error
	for _, n := range names {
		if err := remove(st, cmd.Context(), n); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintln(cmd.OutOrStdout(), "removed", n)
	}
	if len(errs) > 0 {
		return &exitError{code: ExitFailed, err: errors.Join(errs...)}
	}
	return nil
}
