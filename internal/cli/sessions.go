package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/store"
)

// dbFlagUsage documents --db the same way on every command that has it.
const dbFlagUsage = "the thread store (default $" + store.EnvPath + ", else $XDG_DATA_HOME/rein/rein.db)"

// openStore opens the store at path (the --db flag; "" for the default),
// as a usage error when it cannot: rein cannot keep threads there.
func openStore(ctx context.Context, path string) (*store.Store, error) {
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, usageError(fmt.Errorf("%w (choose another file with --db or %s)", err, store.EnvPath))
	}
	return st, nil
}

// persisted is a turn kept in the store: the thread it belongs to, and
// whether it is a new turn or the resume of a paused one.
type persisted struct {
	st      *store.Store
	thread  record.Thread
	history []llm.Item
	// resume continues a paused turn (rein answer); nil runs a new turn.
	resume *resumeTurn
	turnID string
}

// resumeTurn is the paused turn an answer continues.
type resumeTurn struct {
	state  *loop.State
	answer loop.Answer
}

// openPersisted opens the store and the thread of a new turn: the --thread
// one, loaded (a turn cut by a crash is closed on the way), or a new
// thread. It refuses a thread whose latest turn waits for an answer or
// runs in another process.
func openPersisted(ctx context.Context, s *turnSetup) (*persisted, error) {
	if s.persist != nil {
		return s.persist, nil
	}
	st, err := openStore(ctx, s.flags.db)
	if err != nil {
		return nil, err
	}
	p := &persisted{st: st}
	if s.thread == "" {
		p.thread, err = st.CreateThread(ctx, record.Thread{Settings: record.Settings{
			Workspace: s.dir, Model: s.spec.String(),
			Approval: s.flags.approval, Sandbox: s.flags.tools.sandbox, MaxRounds: s.flags.maxRounds, Instructions: s.flags.system,
		}})
		if err != nil {
			st.Close()
			return nil, err
		}
		return p, nil
	}
	snap, err := st.Load(ctx, s.thread)
	if err != nil {
		st.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, usageError(fmt.Errorf("--thread %s: no such thread in %s (rein sessions list shows them)", s.thread, st.Path()))
		}
		return nil, err
	}
	if last := snap.Last(); last != nil {
		switch last.Status {
		case loop.StatusPaused:
			st.Close()
			return nil, usageError(fmt.Errorf("thread %s: turn %s waits for an answer to call %s; answer it first: rein answer %s TEXT", s.thread, last.ID, pauseCall(last), s.thread))
		case store.StatusRunning:
			st.Close()
			return nil, usageError(fmt.Errorf("thread %s: turn %s is running in another process; wait for it to end", s.thread, last.ID))
		}
	}
	p.thread, p.history = snap.Thread, snap.Items
	return p, nil
}

func pauseCall(t *record.Turn) string {
	if t.Pause == nil {
		return "?"
	}
	return t.Pause.CallID
}

// run starts the turn in the store and runs it (or resumes the paused one).
// Every item is journaled as the engine produces it.
func (p *persisted) run(ctx context.Context, engine *loop.Engine, prompt string) (*loop.Outcome, error) {
	if r := p.resume; r != nil {
		raw, err := p.st.ResumeTurn(ctx, r.state.TurnID, r.answer.CallID)
		if err != nil {
			return nil, turnError(err)
		}
		st, err := loop.ParseState(raw)
		if err != nil {
			return nil, err
		}
		p.turnID = st.TurnID
		out, err := engine.Resume(ctx, st, r.answer)
		if out == nil {
			// The answer was refused before anything ran: the turn waits
			// as it did.
			if serr := p.st.SavePause(context.WithoutCancel(ctx), st.TurnID, st.Pause, raw); serr != nil {
				return nil, errors.Join(err, serr)
			}
			return nil, usageError(err)
		}
		return out, nil
	}
	// Claimed in one write of the store, whoever else runs the thread: a
	// turn running in another process refuses this one.
	turn := record.Turn{ID: loop.NewID("turn"), ThreadID: p.thread.ID, Started: time.Now()}
	c, err := p.st.ClaimTurn(ctx, turn)
	if err != nil {
		return nil, turnError(err)
	}
	p.turnID = turn.ID
	if c.Items != len(p.history) {
		// Another process went on with the thread since it was loaded:
		// the turn runs on the history as stored.
		if p.history, err = p.st.Items(ctx, p.thread.ID); err != nil {
			out := &loop.Outcome{ThreadID: p.thread.ID, TurnID: turn.ID, Status: loop.StatusFailed, StopReason: loop.StopProviderError, Err: err}
			return out, nil
		}
	}
	out, err := engine.Run(ctx, loop.Turn{ThreadID: p.thread.ID, ID: turn.ID, History: p.history,
		Input: []llm.Item{llm.UserText(prompt)}, Approved: p.thread.Settings.Approved})
	if out == nil {
		out = &loop.Outcome{ThreadID: p.thread.ID, TurnID: turn.ID, Status: loop.StatusFailed, StopReason: loop.StopProviderError, Err: err}
	}
	return out, nil
}

// turnError is the exit of a turn the store would not start: a usage
// error when the thread cannot take a turn now (one runs elsewhere, one
// waits for an answer, the answer does not fit), a failure when the store
// could not write it (a full disk).
func turnError(err error) error {
	var pm *loop.PauseMismatchError
	if errors.Is(err, store.ErrTurnActive) || errors.Is(err, store.ErrPaused) || errors.Is(err, store.ErrNotFound) ||
		errors.Is(err, loop.ErrNotPaused) || errors.As(err, &pm) {
		return usageError(err)
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("the turn could not start: %w", err)}
}

// finish records how the turn ended, even when ctx was cancelled (an
// interrupted turn is recorded too).
func (p *persisted) finish(ctx context.Context, out *loop.Outcome) error {
	rec, err := out.Record()
	if err == nil {
		err = p.st.FinishTurn(context.WithoutCancel(ctx), rec, out.Approved)
	}
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("the turn ran but was not recorded: %w", err)}
	}
	return nil
}

// report tells a person which thread the turn belongs to and how to go on.
func (p *persisted) report(w io.Writer, out *loop.Outcome) {
	if out.Status == loop.StatusPaused {
		fmt.Fprintf(w, "thread %s paused; answer with: rein answer %s TEXT\n", p.thread.ID, p.thread.ID)
		return
	}
	fmt.Fprintf(w, "thread %s; continue with: rein run --thread %s PROMPT\n", p.thread.ID, p.thread.ID)
}

func (p *persisted) close() { p.st.Close() }

func newSessionsCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:     "sessions list|show|rm",
		Aliases: []string{"threads"},
		Short:   "The threads in the store: list them, show one, remove some",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)

	var limit int
	var asJSON, all bool
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
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.ID, t.Updated.Local().Format(time.DateTime), t.Turns, shorten(t.Title, 60))
			}
			if next != "" {
				fmt.Fprintf(tw, "…\t(more: raise --limit)\t\t\n")
			}
			return tw.Flush()
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, "at most this many threads (0: all)")
	list.Flags().BoolVar(&all, "all", false, "list the threads of every workspace, not only this one's")
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
			return nil
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
			label = "[" + string(it.Origin) + "]"
		}
		fmt.Fprintf(w, "%s %s\n", label, indent(strings.TrimSpace(it.Text())))
	case llm.RoleAssistant:
		if text := strings.TrimSpace(it.Text()); text != "" {
			fmt.Fprintf(w, "%s\n", indent(text))
		}
		for _, c := range it.Calls() {
			fmt.Fprintf(w, "  → %s %s  [%s]\n", c.Name, summarizeArgs(c.Args, 100), c.ID)
		}
	case llm.RoleTool:
		if r := it.Result(); r != nil {
			status := string(r.Status)
			if status == "" {
				status = string(llm.ResultOK)
			}
			fmt.Fprintf(w, "  ← %s %s: %s\n", r.Name, status, summarizeResult(r.Content, 200))
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
