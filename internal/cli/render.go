package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/internal/termtext"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// human renders a turn's events for a person: reasoning and text as they
// stream, each call as it starts, its output while it runs and its end
// with its duration, a paused call with what it waits for, warnings, and a
// summary. On a terminal (color) a status line with the elapsed time shows
// while the turn works between outputs.
type human struct {
	mu         sync.Mutex
	w          io.Writer
	start      time.Time
	now        func() time.Time
	midLine    bool // the last text written did not end a line
	color      bool
	roundStart time.Time
	roundCalls int

	// thinking: reasoning is streaming, since thinkStart.
	thinking   bool
	thinkStart time.Time

	// statusShown: the status line is on the screen, below the output;
	// waiting: a pause waits for the user, who types below the output.
	statusShown, waiting bool
	// stopStatus ends the status line's ticker; nil when none runs.
	stopStatus chan struct{}
	// diffed holds the calls whose file diff was printed.
	diffed map[string]bool
}

func newHuman(w io.Writer, color bool) *human {
	return &human{w: w, start: time.Now(), now: time.Now, color: color}
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

// line writes s as a line of its own.
func (h *human) line(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeLine(s)
}

// writeLine is line with h.mu held (Handle holds it).
func (h *human) writeLine(s string) {
	h.clearStatus()
	if h.midLine {
		fmt.Fprintln(h.w)
		h.midLine = false
	}
	fmt.Fprintln(h.w, s)
}

// write writes s where the output is, without ending the line.
func (h *human) write(s string) {
	if s == "" {
		return
	}
	h.clearStatus()
	fmt.Fprint(h.w, s)
	h.midLine = !strings.HasSuffix(s, "\n")
}

func (h *human) at(t time.Time) string {
	return fmt.Sprintf("+%.2fs", t.Sub(h.start).Seconds())
}

// Handle renders one event. What a model, a tool or a file wrote is
// shown through termtext.Visible, so it cannot drive the terminal or read
// otherwise than it is.
func (h *human) Handle(e event.Event) {
	e = visibleEvent(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.thinking && e.Type != event.ThinkingDelta && visible(e.Type) {
		h.endThinking(e.Time)
	}
	switch e.Type {
	case event.TurnStarted:
		h.startStatus()
	case event.TurnCompleted:
		h.endStatus()
	case event.RoundStarted:
		if e.Round > 1 {
			h.writeLine("")
		}
		h.roundStart, h.roundCalls = e.Time, 0
	case event.RoundCompleted:
		if h.roundCalls > 1 {
			h.writeLine(h.dim(fmt.Sprintf("  round %d: %d calls, each started as soon as its arguments were complete; %.2fs", e.Round, h.roundCalls, e.Time.Sub(h.roundStart).Seconds())))
		}
	case event.ThinkingDelta:
		h.think(e)
	case event.TextDelta:
		h.write(e.Delta)
	case event.ToolStarted:
		h.roundCalls++
		h.writeLine(fmt.Sprintf("  %s %-10s %s  %s", h.bold("▸"), e.Name, summarizeArgs(e.Args, 60), h.dim(h.at(e.Time))))
	case event.ToolOutput:
		// What a command prints, as it prints it: whole lines.
		for l := range strings.SplitSeq(strings.TrimSuffix(e.Delta, "\n"), "\n") {
			h.writeLine(h.dim("    │ " + shorten(strings.TrimRight(l, "\r"), 200)))
		}
	case event.Result:
		switch e.Status {
		case "pending":
			// Not done: the call waits for the user (PauseRequested says
			// for what).
			h.writeLine(fmt.Sprintf("  %s %-10s %s", h.bold("⏸"), e.Name, "paused, waiting for you"))
		default:
			mark := "✓"
			if e.Status != "ok" {
				mark = "✗"
			}
			h.writeLine(fmt.Sprintf("  %s %-10s %s  %s", h.bold(mark), e.Name, h.dim(fmt.Sprintf("%4.0f ms", e.Duration)), summarizeResult(e.Content, 70)))
		}
	case event.ItemAdded:
		// A file edit's result: its diff under the call.
		if it := e.Item; it != nil && it.Role == llm.RoleTool {
			if r := it.Result(); r != nil && !h.diffed[r.CallID] {
				if d := editDiff(r); d != "" {
					if h.diffed == nil {
						h.diffed = make(map[string]bool)
					}
					// Once: a result shortened later is announced again.
					h.diffed[r.CallID] = true
					h.diff(d)
				}
			}
		}
	case event.Retry:
		h.writeLine(h.dim(fmt.Sprintf("  ↻ reconnecting %d/%d: %s", e.Attempt, e.Max, e.Content)))
	case event.Warning:
		h.writeLine(h.dim("  ! " + e.Content))
	case "sources":
		// The knowledge seed (tools/kb): what the first message carries.
		h.writeLine(h.dim("  ⌕ " + e.Content))
	case event.Subagent:
		h.subagent(e)
	case event.PauseRequested:
		h.waiting = true
		h.pause(e)
	case event.PauseResolved:
		h.waiting = false
	}
}

// visibleEvent is e with the text it shows made visible: deltas, names,
// arguments, contents and a pause's words. Items are not changed: a diff
// is made visible line by line where it is printed.
func visibleEvent(e event.Event) event.Event {
	if e.Type == event.ToolOutput {
		// A command's CRLF line ends are line ends, not marks.
		e.Delta = strings.ReplaceAll(e.Delta, "\r\n", "\n")
	}
	e.Delta, e.Name, e.Args, e.Content = termtext.Visible(e.Delta), termtext.Visible(e.Name), termtext.Visible(e.Args), termtext.Visible(e.Content)
	if p := e.Pause; p != nil {
		v := *p
		v.Intro = termtext.Visible(p.Intro)
		v.Questions = make([]tool.Question, len(p.Questions))
		for i, q := range p.Questions {
			q.ID, q.Header, q.Prompt = termtext.Visible(q.ID), termtext.Visible(q.Header), termtext.Visible(q.Prompt)
			q.Options = append([]tool.Option(nil), q.Options...)
			for j := range q.Options {
				q.Options[j].Label = termtext.Visible(q.Options[j].Label)
				q.Options[j].Description = termtext.Visible(q.Options[j].Description)
			}
			v.Questions[i] = q
		}
		e.Pause = &v
	}
	if e.Sub != nil {
		sub := visibleEvent(*e.Sub)
		e.Sub = &sub
	}
	return e
}

// visible says an event shows something, so reasoning before it is over.
func visible(t event.Type) bool {
	switch t {
	case event.TextDelta, event.CallStarted, event.ToolStarted, event.ToolOutput, event.Result,
		event.RoundCompleted, event.Warning, event.PauseRequested, event.TurnCompleted:
		return true
	}
	return false
}

// think streams reasoning, each line marked and dimmed so it never reads
// as the answer.
func (h *human) think(e event.Event) {
	if e.Delta == "" {
		return
	}
	if !h.thinking {
		h.thinking, h.thinkStart = true, e.Time
		h.writeLine(h.dim("  thinking…"))
	}
	var b strings.Builder
	for i, part := range strings.Split(e.Delta, "\n") {
		if i > 0 {
			b.WriteString("\n")
			h.midLine = false
		}
		if part == "" {
			continue
		}
		if !h.midLine {
			b.WriteString(h.dim("  │ "))
			h.midLine = true
		}
		b.WriteString(h.dim(part))
	}
	mid := h.midLine
	h.write(b.String())
	h.midLine = mid
}

// endThinking closes the reasoning with how long it took.
func (h *human) endThinking(t time.Time) {
	h.thinking = false
	d := t.Sub(h.thinkStart)
	if d < 0 {
		d = 0
	}
	h.writeLine(h.dim(fmt.Sprintf("  thought for %.1fs", d.Seconds())))
}

// pause shows what a paused call waits for: the call and its arguments for
// an approval, the questions for ask_user.
func (h *human) pause(e event.Event) {
	p := e.Pause
	if p == nil {
		return
	}
	h.writeLine("")
	if p.Kind == tool.PauseApproval {
		h.writeLine(fmt.Sprintf("%s %s wants to run; it waits for your approval:", h.bold("⏸"), e.Name))
		if p.Intro != "" {
			// Why this call asks (a write every workspace sees).
			h.writeLine("    " + h.bold(p.Intro))
		}
		for _, l := range argLines(e.Args, 20) {
			h.writeLine("    " + l)
		}
		return
	}
	if p.Intro != "" {
		h.writeLine(p.Intro)
	}
	for _, q := range p.Questions {
		h.writeLine(fmt.Sprintf("  ? [%s] %s", q.ID, q.Prompt))
		for _, o := range q.Options {
			h.writeLine("      - " + o.Label)
		}
	}
}

// argLines renders a call's JSON arguments one per line, key: value, a
// long or multi-line value shown up to max lines.
func argLines(args string, max int) []string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return []string{shorten(args, 200)}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		s, ok := m[k].(string)
		if !ok {
			s = jsonText(m[k])
		}
		// Decoded, a value may hold what its JSON escaped.
		k, s = termtext.Visible(k), termtext.Visible(s)
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		if len(lines) == 1 {
			out = append(out, k+": "+shorten(lines[0], 200))
			continue
		}
		out = append(out, k+":")
		for i, l := range lines {
			if i == max {
				out = append(out, fmt.Sprintf("  … %d more lines", len(lines)-max))
				break
			}
			out = append(out, "  "+shorten(l, 200))
		}
	}
	return out
}

// summary prints the outcome's last lines; a paused turn says how to
// answer it, naming the flags that do.
func (h *human) summary(o *loop.Outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endStatus()
	if h.thinking {
		h.endThinking(h.now())
	}
	h.writeLine("")
	parts := []string{string(o.Status), string(o.StopReason),
		plural(o.Rounds, "round"), plural(o.ToolSteps, "tool step"),
		fmt.Sprintf("%d tokens", o.Usage.Total()),
		fmt.Sprintf("%.1fs", h.now().Sub(h.start).Seconds())}
	if o.Cost > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", o.Cost))
	}
	h.writeLine(h.dim("── " + strings.Join(parts, " · ")))
	if o.Err != nil {
		h.writeLine("error: " + termtext.Visible(o.Err.Error()))
	}
	if o.Status == loop.StatusPaused && o.Pause != nil {
		v := *o.Pause
		p := &v
		p.Tool, p.Args, p.Intro = termtext.Visible(p.Tool), termtext.Visible(p.Args), termtext.Visible(p.Intro)
		if p.Kind == tool.PauseApproval {
			h.writeLine(fmt.Sprintf("paused: %s %s waits for your approval (turn %s, call %s)", p.Tool, summarizeArgs(p.Args, 80), o.TurnID, p.CallID))
			if p.Intro != "" {
				h.writeLine(p.Intro + " Each such call is asked for.")
			}
			h.writeLine(fmt.Sprintf("answer: rein answer %s --approve (this call) | --approve-thread (%s for the rest of the thread) | --deny [REASON]", o.ThreadID, p.Tool))
			return
		}
		h.writeLine(fmt.Sprintf("paused: turn %s waits for an answer to call %s", o.TurnID, p.CallID))
		h.writeLine(fmt.Sprintf("answer: rein answer %s TEXT (every question), or --answers '{\"ID\":\"…\"}' (by question id)", o.ThreadID))
	}
}

// clearStatus takes the status line off the screen before output.
func (h *human) clearStatus() {
	if h.statusShown {
		fmt.Fprint(h.w, "\r\x1b[K")
		h.statusShown = false
	}
}

// drawStatus shows "working 12s · ctrl-c to interrupt" below the output,
// when nothing streams and no one is asked anything.
func (h *human) drawStatus() {
	if h.midLine || h.waiting {
		return
	}
	fmt.Fprint(h.w, "\r\x1b[K"+h.dim(fmt.Sprintf("working %ds · ctrl-c to interrupt", int(h.now().Sub(h.start).Seconds()))))
	h.statusShown = true
}

// startStatus starts the status line's timer, on a terminal only; it
// ticks until endStatus (the turn's end or the summary). Called with h.mu
// held.
func (h *human) startStatus() {
	if !h.color || h.stopStatus != nil {
		return
	}
	done := make(chan struct{})
	h.stopStatus = done
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h.mu.Lock()
				select {
				case <-done:
				default:
					h.drawStatus()
				}
				h.mu.Unlock()
			}
		}
	}()
}

// endStatus stops the timer and takes the status line away. Called with
// h.mu held; the ticker, which draws only under h.mu after checking it was
// not stopped, draws nothing after it.
func (h *human) endStatus() {
	if h.stopStatus != nil {
		close(h.stopStatus)
		h.stopStatus = nil
	}
	h.clearStatus()
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
		s := jsonText(m[k])
		if str, ok := m[k].(string); ok && !strings.ContainsAny(str, " \n") {
			s = str
		}
		b.WriteString(k + "=" + s)
	}
	// Decoded, a value may hold what its JSON escaped.
	return shorten(termtext.Visible(b.String()), max)
}

// jsonText is v as JSON, as written: "&&" stays "&&", not "\u0026\u0026".
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
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
