package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/store"
)

// resumeListMax bounds the threads --resume lists: the recent ones are
// what a person picks from; older ones are a prefix id away.
const resumeListMax = 20

// resumeChoice is what `rein chat --continue` or `--resume` chose: a
// thread to open, or nothing (the list was printed, or the user chose
// none).
type resumeChoice struct {
	thread string
	done   bool
}

// chooseThread picks the thread of `rein chat --continue` (the
// workspace's most recent) or `--resume` (one the user picks from the
// workspace's threads, with their first message and age; without a
// terminal the list is printed and nothing is opened). in is read for the
// pick when interactive is true.
func chooseThread(ctx context.Context, db, dir string, resume, interactive bool, in io.Reader, out io.Writer) (resumeChoice, error) {
	st, err := openStore(ctx, db)
	if err != nil {
		return resumeChoice{}, err
	}
	defer st.Close()
	limit := 1
	if resume {
		limit = resumeListMax
	}
	threads, err := st.WorkspaceThreads(ctx, dir, limit)
	if err != nil {
		return resumeChoice{}, err
	}
	if len(threads) == 0 {
		return resumeChoice{}, usageError(fmt.Errorf("no thread in %s yet; rein chat starts one (rein sessions list --all shows every workspace's)", dir))
	}
	if !resume {
		return resumeChoice{thread: threads[0].ID}, nil
	}
	writeThreadList(out, threads, time.Now(), true)
	if !interactive {
		fmt.Fprintln(out, "open one with: rein chat --thread ID (a unique prefix of the id is enough)")
		return resumeChoice{done: true}, nil
	}
	n, err := pickNumber(in, out, len(threads))
	if err != nil {
		return resumeChoice{}, err
	}
	if n == 0 {
		return resumeChoice{done: true}, nil
	}
	return resumeChoice{thread: threads[n-1].ID}, nil
}

// pickNumber asks for a number from 1 to n on out and reads it from in:
// Enter is 1, "q" or the end of input is 0 (none).
func pickNumber(in io.Reader, out io.Writer, n int) (int, error) {
	r := bufio.NewReader(in)
	for {
		fmt.Fprintf(out, "resume which thread? [1-%d, Enter for 1, q to quit] ", n)
		line, err := r.ReadString('\n')
		line = strings.TrimSpace(line)
		if err != nil && line == "" {
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(out)
				return 0, nil
			}
			return 0, err
		}
		switch line {
		case "":
			return 1, nil
		case "q", "Q":
			return 0, nil
		}
		if k, perr := strconv.Atoi(line); perr == nil && k >= 1 && k <= n {
			return k, nil
		}
		fmt.Fprintf(out, "%q is not one of 1-%d\n", line, n)
		if err != nil {
			return 0, nil
		}
	}
}

// writeThreadList prints threads as a table: with numbers to pick by
// when numbered, then id, age, turns and first message.
func writeThreadList(w io.Writer, threads []record.Thread, now time.Time, numbered bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if numbered {
		fmt.Fprint(tw, "#\t")
	}
	fmt.Fprintln(tw, "ID\tUPDATED\tTURNS\tFIRST MESSAGE")
	for i, t := range threads {
		if numbered {
			fmt.Fprintf(tw, "%d\t", i+1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.ID, age(now.Sub(t.Updated)), t.Turns, shorten(oneLine(t.Title), 60))
	}
	tw.Flush()
}

// age says how long ago something happened, as people say it.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// listThreads lists the threads of `rein sessions list`: every thread when
// all is set, else those of the workspace dir ("" for the current
// directory), at most limit (0: all); next is the cursor of the page after
// them (the workspace's list has no pages: raise --limit).
func listThreads(ctx context.Context, st *store.Store, all bool, dir string, limit int) ([]record.Thread, string, error) {
	if all {
		return st.Threads(ctx, limit, "")
	}
	tf := turnFlags{workspace: dir}
	abs, err := tf.workspaceDir()
	if err != nil {
		return nil, "", usageError(err)
	}
	threads, err := st.WorkspaceThreads(ctx, abs, limit)
	return threads, "", err
}
