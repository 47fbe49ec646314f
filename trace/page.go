package trace

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"dur":    formatDuration,
	"tokens": formatTokens,
	"cost":   formatCost,
	"clip":   clip,
}).Parse(pageHTML))

// WriteHTML writes t as one self-contained HTML page: styles and script
// inline, nothing fetched, so the file opens anywhere offline. Every text
// from the turn goes through html/template's escaping.
func WriteHTML(w io.Writer, t *Turn) error {
	if err := page.Execute(w, newView(t)); err != nil {
		return fmt.Errorf("trace: write page: %w", err)
	}
	return nil
}

// view is the page's data: the turn, and where each bar sits on the
// timeline, in percent of the turn's length.
type view struct {
	T        *Turn
	Duration time.Duration
	Ticks    []tick
	Rows     []row
	Marks    []mark // turn-level warnings on the axis row
	Rounds   []roundView
	Calls    int
	Parallel int // the most tool calls running at one moment
	Settle   int
	Forced   bool
}

type tick struct {
	Pos   template.CSS
	Label string
}

// row is one line of the timeline: a round's model call, a tool call, or a
// wait on the user.
type row struct {
	Kind   string // model, tool, wait
	Class  string // extra classes: phase, status
	Label  string
	Badge  string
	Detail string // the id of the details element the bar points to
	Bar    template.CSS
	Back   template.CSS // the round's whole extent, behind its model bar
	Tip    string
	Time   time.Duration
	Marks  []mark
	// Gaps are the waits before a retried model request, drawn over the
	// model bar.
	Gaps []mark
	// Note is shown beside the time: a status other than ok.
	Note string
	at   time.Time // when a wait began
}

type mark struct {
	Pos   template.CSS
	Class string
	Tip   string
	Sign  string
}

type roundView struct {
	*Round
	ID        string
	ModelTime time.Duration
	Span      time.Duration
	Badge     string
	Calls     []callView
	Directive string // the warning that set this round apart, if any
}

type callView struct {
	*Call
	ID   string
	Time time.Duration
}

// scale places times of a turn on the timeline.
type scale struct {
	start time.Time
	total time.Duration
}

func (s scale) pct(t time.Time) float64 {
	p := float64(t.Sub(s.start)) / float64(s.total) * 100
	return math.Max(0, math.Min(100, p))
}

// bar is the position of [from, to]; it is never narrower than a sliver, so
// a call of no length stays visible. Only numbers go into it, which is why
// it may be trusted as CSS.
func (s scale) bar(from, to time.Time) template.CSS {
	l, r := s.pct(from), s.pct(to)
	w := math.Max(r-l, 0.25)
	if l+w > 100 {
		l = 100 - w
	}
	return template.CSS(fmt.Sprintf("left:%.3f%%;width:%.3f%%", l, w))
}

func (s scale) at(t time.Time) template.CSS {
	return template.CSS(fmt.Sprintf("left:%.3f%%", s.pct(t)))
}

func newView(t *Turn) view {
	v := view{T: t, Duration: t.End.Sub(t.Start)}
	sc := scale{start: t.Start, total: v.Duration}
	if sc.total <= 0 {
		sc.total = time.Millisecond
	}
	v.Ticks = ticks(sc)
	for _, w := range t.Warnings {
		v.Marks = append(v.Marks, mark{Pos: sc.at(w.Time), Class: "warn " + w.Code, Sign: "!", Tip: w.Code + ": " + w.Message})
	}
	// Waits come between rounds: each goes before the first round that
	// started after it.
	var waits []row
	for i, w := range t.Waits {
		label := "waiting on you"
		if w.Kind != "" {
			label += " (" + w.Kind + ")"
		}
		tip := fmt.Sprintf("%s · %s · %s", label, w.Tool, formatDuration(w.End.Sub(w.Start)))
		if w.Open {
			tip += " · still waiting when the turn ended"
		} else if w.Answer != "" {
			tip += " · " + clip(w.Answer, 120)
		}
		class := ""
		if w.Open {
			class = "open"
		}
		waits = append(waits, row{Kind: "wait", Class: class, Label: label, Detail: fmt.Sprintf("wait-%d", i),
			Bar: sc.bar(w.Start, w.End), Tip: tip, Time: w.End.Sub(w.Start), at: w.Start})
	}
	for _, r := range t.Rounds {
		for len(waits) > 0 && waits[0].at.Before(r.Start) {
			v.Rows, waits = append(v.Rows, waits[0]), waits[1:]
		}
		rv := roundView{Round: r, ID: fmt.Sprintf("round-%d", r.N), ModelTime: r.ModelEnd.Sub(r.Start), Span: r.End.Sub(r.Start)}
		switch r.Phase {
		case llm.PhaseSettle:
			rv.Badge = "settlement"
			v.Settle++
		case llm.PhaseFinal:
			rv.Badge = "forced"
			v.Forced = true
		}
		class := "phase-" + string(r.Phase)
		if r.Failed() {
			class += " failed"
		}
		tip := fmt.Sprintf("round %d · model %s · %s in / %s out", r.N, formatDuration(rv.ModelTime), formatTokens(r.Usage.InputTokens), formatTokens(r.Usage.OutputTokens))
		if r.Finish != "" {
			tip += " · finish " + r.Finish
		} else {
			tip += " · no response"
		}
		note := ""
		if r.Failed() {
			note = "no response"
		}
		mr := row{Kind: "model", Class: class, Note: note, Label: fmt.Sprintf("Round %d", r.N), Badge: rv.Badge, Detail: rv.ID,
			Bar: sc.bar(r.Start, r.ModelEnd), Back: sc.bar(r.Start, r.End), Tip: tip, Time: rv.ModelTime}
		for _, x := range r.Retries {
			mr.Gaps = append(mr.Gaps, mark{Pos: sc.bar(x.Time, x.Time.Add(x.Delay)), Class: "gap",
				Tip: fmt.Sprintf("waiting %s before retry %d/%d", formatDuration(x.Delay), x.Attempt, x.Max)})
			mr.Marks = append(mr.Marks, mark{Pos: sc.at(x.Time), Class: "retry", Sign: "↻",
				Tip: fmt.Sprintf("retry %d/%d after %s: %s", x.Attempt, x.Max, formatDuration(x.Delay), x.Message)})
		}
		for _, w := range r.Warnings {
			mr.Marks = append(mr.Marks, mark{Pos: sc.at(w.Time), Class: "warn " + w.Code, Sign: "!", Tip: w.Code + ": " + w.Message})
		}
		v.Rows = append(v.Rows, mr)
		for _, c := range r.Calls {
			cv := callView{Call: c, ID: fmt.Sprintf("call-%d-%d", r.N, c.Index)}
			tr := row{Kind: "tool", Class: "status-" + c.Status, Label: c.Name, Detail: cv.ID}
			if c.Ran() {
				cv.Time = c.End.Sub(c.Start)
				tr.Bar = sc.bar(c.Start, c.End)
				tr.Tip = fmt.Sprintf("%s · %s · %s", c.Name, c.Status, formatDuration(cv.Time))
			} else {
				at := c.End
				if at.IsZero() {
					at = c.Written
				}
				tr.Class += " notrun"
				tr.Bar = sc.bar(at, at)
				tr.Tip = fmt.Sprintf("%s · %s (did not run)", c.Name, c.Status)
			}
			tr.Time = cv.Time
			if c.Status != string(llm.ResultOK) {
				tr.Note = strings.ReplaceAll(c.Status, "_", " ")
			}
			rv.Calls = append(rv.Calls, cv)
			v.Rows = append(v.Rows, tr)
			v.Calls++
		}
		v.Rounds = append(v.Rounds, rv)
		if p := parallel(r.Calls); p > v.Parallel {
			v.Parallel = p
		}
	}
	v.Rows = append(v.Rows, waits...)
	return v
}

// parallel returns the most calls of a round that ran at one moment.
func parallel(calls []*Call) int {
	most := 0
	for _, a := range calls {
		if !a.Ran() {
			continue
		}
		n := 0
		for _, b := range calls {
			if b.Ran() && !b.Start.After(a.Start) && b.End.After(a.Start) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// ticks returns axis labels at a round step: 1, 2 or 5 times a power of
// ten, about six of them.
func ticks(sc scale) []tick {
	raw := float64(sc.total) / 6
	step := time.Duration(math.Pow(10, math.Floor(math.Log10(raw))))
	for _, m := range []time.Duration{1, 2, 5, 10} {
		if float64(step*m) >= raw {
			step *= m
			break
		}
	}
	if step <= 0 {
		step = time.Millisecond
	}
	var out []tick
	for d := time.Duration(0); d <= sc.total; d += step {
		out = append(out, tick{Pos: sc.at(sc.start.Add(d)), Label: formatDuration(d)})
	}
	return out
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 ms"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%d m %02d s", int(d.Minutes()), int(d.Seconds())%60)
}

func formatTokens(n int64) string {
	s := fmt.Sprint(n)
	if n < 10000 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func formatCost(c float64) string {
	if c <= 0 {
		return "—"
	}
	return fmt.Sprintf("$%.4f", c)
}

// clip cuts s to at most n bytes on a rune boundary and says how much was
// left out: a page with a megabyte of tool output is not one anyone reads.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more bytes)", len(s)-cut)
}
