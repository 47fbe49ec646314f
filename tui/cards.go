package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// cardState is where a tool call is.
type cardState int

const (
	// cardWaiting: the model wrote the call; it has not started.
	cardWaiting cardState = iota
	cardRunning
	cardDone
	cardFailed
	// cardWaitingUser: the call waits for the user (approval, ask_user).
	cardWaitingUser
	// cardAborted: the turn ended before the call did.
	cardAborted
)

// card is one tool call of the live round.
type card struct {
	id, name, args string
	state          cardState
	started        time.Time
	duration       time.Duration
	// result is the first line of the result.
	result string
	lines  int
	// diff is the change an edit_file or write_file call made.
	diff string
}

// finish records the call's result.
func (c *card) finish(status, content string, ms float64) {
	switch status {
	case "ok":
		c.state = cardDone
	case "pending":
		c.state = cardWaitingUser
	case "aborted":
		c.state = cardAborted
	default:
		c.state = cardFailed
	}
	c.duration = time.Duration(ms * float64(time.Millisecond))
	if c.state == cardDone {
		c.diff = resultDiff(c.name, c.args, content)
	}
	content = strings.TrimSpace(content)
	c.result, _, _ = strings.Cut(content, "\n")
	c.lines = strings.Count(content, "\n") + 1
}

// render draws the card: one line (mark, tool, arguments, time, the
// result's first line) and, for a file edit, its diff folded.
func (c *card) render(now time.Time, s styles, width int) string {
	head := c.head(now, s, width)
	if c.diff == "" {
		return head
	}
	d, _ := foldDiff(c.diff, cardDiffLines, s)
	return head + "\n" + indent(d, "    ")
}

// folded says the card's diff is longer than the card shows.
func (c *card) folded() bool {
	return c.diff != "" && strings.Count(strings.TrimRight(c.diff, "\n"), "\n")+1 > cardDiffLines
}

// head is the card's first line.
func (c *card) head(now time.Time, s styles, width int) string {
	var mark, when string
	switch c.state {
	case cardWaiting:
		mark = s.dim.Render("○")
	case cardRunning:
		mark = s.running.Render("●")
		if !c.started.IsZero() {
			when = seconds(now.Sub(c.started))
		}
	case cardDone:
		mark, when = s.ok.Render("✓"), c.took()
	case cardFailed:
		mark, when = s.bad.Render("✗"), c.took()
	case cardWaitingUser:
		mark, when = s.warn.Render("?"), "waiting for you"
	case cardAborted:
		mark, when = s.warn.Render("■"), "aborted"
	}
	head := fmt.Sprintf("  %s %s %s", mark, s.bold.Render(oneLine(c.name)), argsLine(c.name, c.args, max(10, width/2)))
	if when != "" {
		head += "  " + s.dim.Render(when)
	}
	if c.result != "" && (c.state == cardDone || c.state == cardFailed) && (c.diff == "" || c.state == cardFailed) {
		res := c.result
		if c.lines > 1 {
			res += fmt.Sprintf(" (+%d lines)", c.lines-1)
		}
		room := max(10, width-visibleWidth(head)-5)
		style := s.dim
		if c.state == cardFailed {
			style = s.bad
		}
		head += "  " + style.Render("→ "+shorten(oneLine(res), room))
	}
	return head
}

// took is how long the call ran; a card replayed from a stored thread has
// no time.
func (c *card) took() string {
	if c.duration == 0 && c.started.IsZero() {
		return ""
	}
	return duration(c.duration)
}

// pauseCard is a pause the turn waits on: ask_user questions answered one at
// a time in the input line, or an approval answered with one key.
type pauseCard struct {
	turnID, callID string
	kind           tool.PauseKind
	tool, args     string
	intro          string
	questions      []tool.Question
	answers        []loop.QuestionAnswer
	// diff is the change an approval of a file edit would let through;
	// before is the file's content it was computed from, when known.
	diff   string
	before string
	known  bool
	// hint says why the last answer was not taken.
	hint string
}

func newPauseCard(e event.Event) *pauseCard {
	p := &pauseCard{turnID: e.TurnID, callID: e.CallID, tool: e.Name, args: e.Args, kind: tool.PauseAskUser}
	if e.Pause != nil {
		p.kind, p.intro, p.questions = e.Pause.Kind, e.Pause.Intro, e.Pause.Questions
	}
	return p
}

// question returns the question waiting for an answer.
func (p *pauseCard) question() *tool.Question {
	if len(p.answers) < len(p.questions) {
		return &p.questions[len(p.answers)]
	}
	return nil
}

// take records the answer typed for the current question. It returns the
// complete answer once every question has one.
func (p *pauseCard) take(text string) (*loop.Answer, error) {
	q := p.question()
	if q == nil {
		// A pause without questions takes one free answer.
		return &loop.Answer{TurnID: p.turnID, CallID: p.callID, Text: text}, nil
	}
	ans, err := pick(q, text)
	if err != nil {
		return nil, err
	}
	p.answers = append(p.answers, loop.QuestionAnswer{QuestionID: q.ID, Text: ans})
	if p.question() != nil {
		return nil, nil
	}
	return &loop.Answer{TurnID: p.turnID, CallID: p.callID, Answers: p.answers}, nil
}

// pick turns typed text into an answer to q: option numbers ("2", or
// "1,3" when several may be chosen) or labels become the labels; other text
// is a free answer where the question allows one.
func pick(q *tool.Question, text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", fmt.Errorf("type an answer")
	}
	if len(q.Options) == 0 {
		return text, nil
	}
	var labels []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > len(q.Options) {
			labels = nil
			break
		}
		labels = append(labels, q.Options[n-1].Label)
	}
	if len(labels) > 1 && !q.MultiSelect {
		return "", fmt.Errorf("pick one option, 1–%d", len(q.Options))
	}
	if len(labels) > 0 {
		return strings.Join(labels, ", "), nil
	}
	if i := slices.IndexFunc(q.Options, func(o tool.Option) bool { return strings.EqualFold(o.Label, text) }); i >= 0 {
		return q.Options[i].Label, nil
	}
	if q.AllowFreeText {
		return text, nil
	}
	return "", fmt.Errorf("pick an option, 1–%d", len(q.Options))
}

// decision maps an approval key to a decision.
func decision(key string) (loop.Decision, bool) {
	switch key {
	case "y", "1":
		return loop.Approve, true
	case "a", "2":
		return loop.ApproveThread, true
	case "n", "3":
		return loop.Deny, true
	}
	return "", false
}

// approval answers an approval pause with d.
func (p *pauseCard) approval(d loop.Decision) loop.Answer {
	return loop.Answer{TurnID: p.turnID, CallID: p.callID, Decision: d}
}

// render draws the pause card; expanded shows an approval's diff whole.
func (p *pauseCard) render(s styles, width int, expanded bool) string {
	var b strings.Builder
	if p.kind == tool.PauseApproval {
		keys := "[y] approve  [a] approve for this thread  [n] deny"
		if p.intro != "" {
			// The call's arguments made it ask (a write every workspace
			// sees): say why, and show what it writes whole.
			fmt.Fprintf(&b, "%s %s\n%s\n%s\n", s.warn.Render("approve?"), s.bold.Render(oneLine(p.tool)),
				s.warn.Render(wrap(printable(p.intro), width-6)), argsBlock(p.args, width-6, approvalTextLines))
			b.WriteString("[y] approve  [n] deny  · asked for each such call")
			return s.card.Width(max(20, width-2)).Render(b.String())
		}
		fmt.Fprintf(&b, "%s %s %s\n", s.warn.Render("approve?"), s.bold.Render(oneLine(p.tool)), argsLine(p.tool, p.args, max(10, width-20)))
		if p.diff != "" {
			limit := approvalDiffLines
			if expanded {
				limit = 0
			}
			d, folded := foldDiff(p.diff, limit, s)
			b.WriteString(d + "\n")
			if folded || expanded {
				keys += "  · ctrl+o fold/expand"
			}
		}
		b.WriteString(keys)
		return s.card.Width(max(20, width-2)).Render(b.String())
	}
	if p.intro != "" {
		b.WriteString(wrap(p.intro, width-6) + "\n")
	}
	for i, a := range p.answers {
		fmt.Fprintf(&b, "%s %s %s\n", s.dim.Render("✓"), s.dim.Render(oneLine(p.questions[i].Prompt)), oneLine(a.Text))
	}
	if q := p.question(); q != nil {
		head := printable(q.Prompt)
		if q.Header != "" {
			head = oneLine(q.Header) + ": " + head
		}
		if len(p.questions) > 1 {
			head += s.dim.Render(fmt.Sprintf("  (%d/%d)", len(p.answers)+1, len(p.questions)))
		}
		b.WriteString(s.warn.Render("? ") + s.bold.Render(head))
		for i, o := range q.Options {
			line := fmt.Sprintf("\n  %d. %s", i+1, oneLine(o.Label))
			if o.Description != "" {
				line += s.dim.Render(" — " + oneLine(o.Description))
			}
			b.WriteString(line)
		}
		switch {
		case len(q.Options) > 0 && q.MultiSelect:
			b.WriteString(s.dim.Render("\nanswer with numbers (1,3)" + freeText(q) + ", then Enter"))
		case len(q.Options) > 0:
			b.WriteString(s.dim.Render("\nanswer with a number" + freeText(q) + ", then Enter"))
		default:
			b.WriteString(s.dim.Render("\ntype your answer, then Enter"))
		}
	}
	if p.hint != "" {
		b.WriteString("\n" + s.bad.Render(p.hint))
	}
	return s.card.Width(max(20, width-2)).Render(b.String())
}

func freeText(q *tool.Question) string {
	if q.AllowFreeText {
		return " or your own words"
	}
	return ""
}

// approvalTextLines bounds each argument an approval box shows whole.
const approvalTextLines = 12

// argsBlock is a call's arguments one per line, key: value, a multi-line
// value indented under its key and cut to max lines; control characters
// are made visible.
func argsBlock(args string, width, max int) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return wrap(printable(args), width)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString("\n")
		}
		v, ok := m[k].(string)
		if !ok {
			raw, _ := json.Marshal(m[k])
			v = string(raw)
		}
		lines := strings.Split(wrap(printable(strings.TrimRight(v, "\n")), width-4), "\n")
		if len(lines) == 1 {
			b.WriteString(printable(k) + ": " + lines[0])
			continue
		}
		b.WriteString(printable(k) + ":")
		for j, l := range lines {
			if j == max {
				fmt.Fprintf(&b, "\n  … %d more lines", len(lines)-max)
				break
			}
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

// argsLine is a call's arguments on one line: a file edit names its file
// (its diff shows the rest), other calls show key=value pairs.
func argsLine(name, args string, width int) string {
	if isEdit(name) {
		var a editArgs
		if json.Unmarshal([]byte(args), &a) == nil && a.Path != "" {
			return shorten(oneLine(printable(a.Path)), width)
		}
	}
	return summarizeArgs(args, width)
}

// summarizeArgs renders JSON arguments as key=value pairs on one line.
func summarizeArgs(args string, width int) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return shorten(oneLine(args), width)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m[k]
		str, ok := v.(string)
		if !ok || strings.ContainsAny(str, " \n\t\"") {
			raw, _ := json.Marshal(v)
			str = string(raw)
		}
		parts = append(parts, k+"="+str)
	}
	return shorten(oneLine(strings.Join(parts, " ")), width)
}

func duration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return seconds(d)
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}
