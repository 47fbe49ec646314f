package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/trace"
)

func newTraceCmd() *cobra.Command {
	var eventsPath, htmlPath, turnID, db string
	cmd := &cobra.Command{
		Use:   "trace [THREAD] [--events FILE] --html OUT [--turn ID]",
		Short: "Write a turn's timeline as one HTML page",
		Long: "Write a turn as one self-contained HTML page (it opens offline): a timeline of its rounds\n" +
			"with model calls and tool calls as bars, waits on you, retries, tokens and cost per round,\n" +
			"settlement and forced rounds marked, and the answer.\n" +
			"The events come from the store (rein trace THREAD: every turn of run, answer, chat and serve keeps one), or from\n" +
			"`rein run --events FILE` (or the output of `rein run --json`); - reads standard input.\n" +
			"Without --turn the last turn is written.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if htmlPath == "" || (len(args) == 0) == (eventsPath == "") {
				return usageError(errors.New("give a thread or the events, and the page: rein trace THREAD --html OUT, or rein trace --events FILE --html OUT"))
			}
			var events []event.Event
			var err error
			if len(args) == 1 {
				events, err = storedEvents(cmd.Context(), db, args[0])
			} else {
				events, err = readEvents(cmd.InOrStdin(), eventsPath)
			}
			if err != nil {
				return usageError(err)
			}
			t, err := pickTurn(trace.Turns(events), turnID)
			if err != nil {
				return usageError(err)
			}
			if err := writePage(cmd.OutOrStdout(), htmlPath, t); err != nil {
				return err
			}
			if htmlPath != "-" {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: turn %s, %d rounds, %s\n", htmlPath, t.ID, len(t.Rounds), orIncomplete(t.Status))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&eventsPath, "events", "", "the turn's events as JSON Lines (rein run --events FILE), - for standard input")
	fl.StringVar(&htmlPath, "html", "", "the page to write, - for standard output")
	fl.StringVar(&turnID, "turn", "", "the turn to show (default: the last one in the events)")
	fl.StringVar(&db, "db", "", dbFlagUsage)
	return cmd
}

func readEvents(stdin io.Reader, path string) ([]event.Event, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		defer f.Close()
		r = f
	}
	events, err := trace.Read(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("--events %s: %w", path, err)
	}
	return events, nil
}

// pickTurn returns the turn with id, or the last turn when id is empty.
func pickTurn(turns []*trace.Turn, id string) (*trace.Turn, error) {
	if len(turns) == 0 {
		return nil, errors.New("the events hold no turn")
	}
	if id == "" {
		return turns[len(turns)-1], nil
	}
	ids := make([]string, 0, len(turns))
	for _, t := range turns {
		if t.ID == id {
			return t, nil
		}
		ids = append(ids, t.ID)
	}
	return nil, fmt.Errorf("--turn %s: not in the events; they hold %s", id, strings.Join(ids, ", "))
}

// writePage writes the page next to its destination and renames it into
// place, so a failed write never leaves half a page behind.
func writePage(stdout io.Writer, path string, t *trace.Turn) error {
	if path == "-" {
		return trace.WriteHTML(stdout, t)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".trace-*.html")
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	err = trace.WriteHTML(w, t)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}

func orIncomplete(status string) string {
	if status == "" {
		return "incomplete"
	}
	return status
}

// recorders write a turn's events to the --events file beside its output.
type recorders struct {
	handler event.Handler // nil when nothing records
	file    *os.File
	buf     *bufio.Writer
}

// newRecorders opens the --events file at eventsPath ("" for none). The
// caller must call close when the turn has ended.
func newRecorders(eventsPath string) (*recorders, error) {
	r := &recorders{}
	if eventsPath != "" {
		f, err := os.Create(eventsPath)
		if err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		r.file, r.buf = f, bufio.NewWriter(f)
		r.handler = newJSONLines(r.buf)
	}
	return r, nil
}

// close flushes the events file, reporting what failed on stderr: the
// turn's outcome stands either way.
func (r *recorders) close(stderr io.Writer) {
	if r.buf == nil {
		return
	}
	err := r.buf.Flush()
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(stderr, "rein: --events:", err)
	}
	r.buf = nil
}

// shutdownExport flushes the OpenTelemetry exporters of x (nil or not
// enabled: nothing to do). The turn's context may be cancelled (an
// interrupt); the spans of the interrupted turn are worth a short wait all
// the same.
func shutdownExport(x *telemetry.Export, stderr io.Writer) {
	if x == nil || !x.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := x.Shutdown(ctx); err != nil {
		fmt.Fprintln(stderr, "rein: OpenTelemetry export:", err)
	}
}

// storedEvents reads the events rein kept for thread.
func storedEvents(ctx context.Context, db, thread string) ([]event.Event, error) {
	raw, err := storedTrace(ctx, db, thread)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("thread %s: no trace kept (rein sessions list shows the threads; a turn keeps its trace when it ends, through any door)", thread)
	}
	var buf bytes.Buffer
	for _, r := range raw {
		buf.Write(r)
		buf.WriteByte('\n')
	}
	return trace.Read(&buf)
}
