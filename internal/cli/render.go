package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/loop"
)

// human renders a turn's events for a person: text as it streams, each
// call as it starts and finishes with its duration, warnings, and a summary.
type human struct {
	w          io.Writer
	start      time.Time
	midLine    bool // the last text written did not end a line
	color      bool
	roundStart time.Time
	roundCalls int
}

func newHuman(w io.Writer, color bool) *human {
	return &human{w: w, start: time.Now(), color: color}
}

func (h *human) dim(s string) string {
	if !h.color {
		return s
	}
	return "\x1b[2m" + s + "\x1b[0m"
}

func (h *human) bold(s string) string {
	if !h.color {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

func (h *human) line(s string) {
	if h.midLine {
		fmt.Fprintln(h.w)
		h.midLine = false
	}
	fmt.Fprintln(h.w, s)
}

func (h *human) at(t time.Time) string {
	return fmt.Sprintf("+%.2fs", t.Sub(h.start).Seconds())
}

func (h *human) Handle(e event.Event) {
	switch e.Type {
	case event.RoundStarted:
		if e.Round > 1 {
			h.line("")
		}
		h.roundStart, h.roundCalls = e.Time, 0
	case event.RoundCompleted:
		if h.roundCalls > 1 {
			h.line(h.dim(fmt.Sprintf("  round %d: %d calls, each started as soon as its arguments were complete; %.2fs", e.Round, h.roundCalls, e.Time.Sub(h.roundStart).Seconds())))
		}
	case event.TextDelta:
		fmt.Fprint(h.w, e.Delta)
		h.midLine = !strings.HasSuffix(e.Delta, "\n")
	case event.ToolStarted:
		h.roundCalls++
		h.line(fmt.Sprintf("  %s %-10s %s  %s", h.bold("▸"), e.Name, summarizeArgs(e.Args, 60), h.dim(h.at(e.Time))))
	case event.Result:
		mark := "✓"
		if e.Status != "ok" && e.Status != "pending" {
			mark = "✗"
		}
		h.line(fmt.Sprintf("  %s %-10s %s  %s", h.bold(mark), e.Name, h.dim(fmt.Sprintf("%4.0f ms", e.Duration)), summarizeResult(e.Content, 70)))
	case event.Retry:
		h.line(h.dim(fmt.Sprintf("  ↻ reconnecting %d/%d: %s", e.Attempt, e.Max, e.Content)))
	case event.Warning:
		h.line(h.dim("  ! " + e.Content))
	case "sources":
		// The knowledge seed (tools/kb): what the first message carries.
		h.line(h.dim("  ⌕ " + e.Content))
	case event.Subagent:
		h.subagent(e)
	case event.PauseRequested:
		if e.Pause != nil {
			h.line("")
			if e.Pause.Intro != "" {
				h.line(e.Pause.Intro)
			}
			for _, q := range e.Pause.Questions {
				h.line(fmt.Sprintf("  ? [%s] %s", q.ID, q.Prompt))
				for _, o := range q.Options {
					h.line("      - " + o.Label)
				}
			}
		}
	}
}

// summary prints the outcome's last lines.
func (h *human) summary(o *loop.Outcome) {
	h.line("")
	parts := []string{string(o.Status), string(o.StopReason),
		plural(o.Rounds, "round"), plural(o.ToolSteps, "tool step"),
		fmt.Sprintf("%d tokens", o.Usage.Total()),
		fmt.Sprintf("%.1fs", time.Since(h.start).Seconds())}
	if o.Cost > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", o.Cost))
	}
	h.line(h.dim("── " + strings.Join(parts, " · ")))
	if o.Err != nil {
		h.line("error: " + o.Err.Error())
	}
	if o.Status == loop.StatusPaused && o.Pause != nil {
		h.line(fmt.Sprintf("paused: turn %s waits for an answer to call %s", o.TurnID, o.Pause.CallID))
	}
}

func plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// summarizeArgs renders JSON arguments as key=value pairs, shortened.
func summarizeArgs(args string, max int) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return shorten(args, max)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		v, _ := json.Marshal(m[k])
		s := string(v)
		if str, ok := m[k].(string); ok && !strings.ContainsAny(str, " \n") {
			s = str
		}
		b.WriteString(k + "=" + s)
	}
	return shorten(b.String(), max)
}

// summarizeResult shows a result's first line and how many lines it has.
func summarizeResult(s string, max int) string {
	s = strings.TrimSpace(s)
	n := strings.Count(s, "\n") + 1
	first, _, _ := strings.Cut(s, "\n")
	out := shorten(first, max)
	if n > 1 {
		out += fmt.Sprintf(" (+%d lines)", n-1)
	}
	return out
}

func shorten(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}
