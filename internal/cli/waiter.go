package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// termWaiter answers a pause on the terminal: one line per question.
type termWaiter struct {
	in  io.Reader
	out io.Writer
}

func (w *termWaiter) Wait(ctx context.Context, p loop.Pause) (loop.Answer, error) {
	type result struct {
		a   loop.Answer
		err error
	}
	done := make(chan result, 1)
	// Reading a terminal cannot be cancelled; the goroutine ends with the
	// next line or when the process exits.
	go func() {
		sc := bufio.NewScanner(w.in)
		a := loop.Answer{TurnID: p.TurnID, CallID: p.CallID}
		if p.Kind == tool.PauseApproval {
			if p.Intro != "" {
				// Why this call asks (a write every workspace sees).
				fmt.Fprintln(w.out, termtext.Visible(p.Intro))
			}
			for a.Decision == "" {
				fmt.Fprintf(w.out, "Run %s %s? [y]es, [a]lways in this thread, [n]o: ", termtext.Visible(p.Tool), summarizeArgs(p.Args, 2000))
				if !sc.Scan() {
					done <- result{err: io.ErrUnexpectedEOF}
					return
				}
				switch strings.ToLower(strings.TrimSpace(sc.Text())) {
				case "y", "yes":
					a.Decision = loop.Approve
				case "a", "always":
					a.Decision = loop.ApproveThread
				case "n", "no":
					a.Decision = loop.Deny
				}
			}
			done <- result{a: a}
			return
		}
		for _, q := range p.Questions {
			fmt.Fprintf(w.out, "%s ", termtext.Visible(q.Prompt))
			if len(q.Options) > 0 {
				labels := make([]string, len(q.Options))
				for i, o := range q.Options {
					labels[i] = termtext.Visible(o.Label)
				}
				fmt.Fprintf(w.out, "[%s] ", strings.Join(labels, " / "))
			}
			if !sc.Scan() {
				done <- result{err: io.ErrUnexpectedEOF}
				return
			}
			a.Answers = append(a.Answers, loop.QuestionAnswer{QuestionID: q.ID, Text: sc.Text()})
		}
		done <- result{a: a}
	}()
	select {
	case r := <-done:
		return r.a, r.err
	case <-ctx.Done():
		return loop.Answer{}, ctx.Err()
	}
}
