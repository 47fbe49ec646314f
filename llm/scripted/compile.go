package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// plan is a round compiled once, when the model is made, so serving it costs
// only the per-use allocations: the stream, the calls and the parts.
type plan struct {
	index  int // 0-based position in Script.Rounds
	line   int
	repeat int
	model  string

	thinking, text string
	calls          []callPlan
	steps          []step // every event but done, in order
	holdAt         int    // index of the step before which Hold is waited
	finish         llm.FinishReason
	usage          llm.Usage
	delay, hold    time.Duration
	fail           *llm.Error
	failAfter      int
	expect         []Expect
}

type callPlan struct {
	id, name, args string
}

// step is one event of a round, without the parts that vary per use (call
// ids, the response).
type step struct {
	kind  llm.EventKind
	index int
	delta string
}

// maxRepeat bounds Round.Repeat so the count of rounds cannot overflow.
const maxRepeat = 1 << 30

// compile validates a script and precomputes its rounds. Errors name the
// round and, for scripts read from a file, its line.
func compile(s Script) ([]plan, error) {
	model := s.Model
	if model == "" {
		model = "scripted"
	}
	if s.Chunk < 0 {
		return nil, fmt.Errorf("chunk is %d, want 0 or more", s.Chunk)
	}
	if s.Delay < 0 {
		return nil, fmt.Errorf("delay is %v, want 0 or more", s.Delay)
	}
	plans := make([]plan, len(s.Rounds))
	ids := make(map[string]int) // explicit call id -> round index
	var errs []error
	for i := range s.Rounds {
		r := &s.Rounds[i]
		if err := compileRound(&plans[i], r, i, model, s, ids); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", roundName(i, r.line), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return plans, nil
}

func roundName(i, line int) string {
	if line > 0 {
		return fmt.Sprintf("script round %d (line %d)", i+1, line)
	}
	return fmt.Sprintf("script round %d", i+1)
}

func compileRound(p *plan, r *Round, i int, model string, s Script, ids map[string]int) error {
	*p = plan{index: i, line: r.line, model: model, thinking: r.Thinking, text: r.Text, usage: r.Usage, hold: r.Hold}
	chunk, delay := r.Chunk, r.Delay
	if chunk == 0 {
		chunk = s.Chunk
	}
	if delay == 0 {
		delay = s.Delay
	}
	p.delay = delay
	switch {
	case chunk < 0:
		return fmt.Errorf("chunk is %d, want 0 or more", chunk)
	case delay < 0:
		return fmt.Errorf("delay is %v, want 0 or more", delay)
	case r.Hold < 0:
		return fmt.Errorf("hold is %v, want 0 or more", r.Hold)
	case r.Repeat < 0 || r.Repeat > maxRepeat:
		return fmt.Errorf("repeat is %d, want 0 to %d", r.Repeat, maxRepeat)
	}
	p.repeat = max(r.Repeat, 1)

	p.finish = r.Finish
	if p.finish == "" {
		p.finish = llm.FinishStop
		if len(r.Calls) > 0 {
			p.finish = llm.FinishToolCalls
		}
	}
	switch p.finish {
	case llm.FinishStop, llm.FinishToolCalls, llm.FinishLength, llm.FinishContentFilter, llm.FinishOther:
	default:
		return errors.New("finish is not one of stop, tool_calls, length, content_filter, other")
	}

	p.calls = make([]callPlan, len(r.Calls))
	for j, c := range r.Calls {
		cp, err := compileCall(c)
		if err != nil {
			return fmt.Errorf("call %d: %w", j+1, err)
		}
		if cp.id != "" {
			if prev, dup := ids[cp.id]; dup {
				return fmt.Errorf("call %d: its id is already used in %s", j+1, roundName(prev, 0))
			}
			ids[cp.id] = i
		}
		p.calls[j] = cp
	}

	if r.Error != nil {
		e, err := compileError(r.Error)
		if err != nil {
			return fmt.Errorf("error: %w", err)
		}
		p.fail, p.failAfter = e, r.Error.After
	}

	for j := range r.Expect {
		if err := checkExpect(&r.Expect[j]); err != nil {
			return fmt.Errorf("expect %d: %w", j+1, err)
		}
	}
	p.expect = r.Expect

	p.steps = appendChunks(p.steps, llm.EventReasoning, 0, r.Thinking, chunk)
	p.steps = appendChunks(p.steps, llm.EventText, 0, r.Text, chunk)
	for j, c := range p.calls {
		p.steps = append(p.steps, step{kind: llm.EventCallStart, index: j})
		p.steps = appendChunks(p.steps, llm.EventCallDelta, j, c.args, chunk)
		p.steps = append(p.steps, step{kind: llm.EventCallDone, index: j})
	}
	p.holdAt = len(p.steps)
	p.steps = append(p.steps, step{kind: llm.EventUsage})
	p.failAfter = min(p.failAfter, len(p.steps))
	return nil
}

func compileCall(c Call) (callPlan, error) {
	if c.Name == "" {
		return callPlan{}, errors.New("name is empty")
	}
	if isGeneratedID(c.ID) {
		return callPlan{}, errors.New("id has the form of a generated id (call_…); choose another")
	}
	cp := callPlan{id: c.ID, name: c.Name}
	switch {
	case c.Args != nil && c.RawArgs != "":
		return callPlan{}, errors.New("both args and raw_args are set; use one")
	case c.RawArgs != "":
		cp.args = c.RawArgs
	case c.Args == nil:
		cp.args = "{}"
	default:
		// Not json.Marshal: it would escape <, > and & in a shell command.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c.Args); err != nil {
			return callPlan{}, fmt.Errorf("args: %w", err)
		}
		b := bytes.TrimSpace(buf.Bytes())
		if len(b) == 0 || b[0] != '{' {
			return callPlan{}, errors.New("args is not a JSON object (use raw_args for anything else)")
		}
		cp.args = string(b)
	}
	return cp, nil
}

// isGeneratedID reports whether id has the form of the ids the model
// generates, call_<n>_<i>, which a script may not use lest they collide.
func isGeneratedID(id string) bool {
	rest, ok := strings.CutPrefix(id, "call_")
	if !ok {
		return false
	}
	n, i, ok := strings.Cut(rest, "_")
	return ok && digits(n) && digits(i)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var errorKinds = []llm.ErrorKind{
	llm.ContextWindowExceeded, llm.RateLimited, llm.Unauthorized, llm.BadRequest,
	llm.ServerError, llm.StreamInterrupted, llm.ToolsUnsupported, llm.Timeout, llm.TooLarge,
}

func compileError(es *ErrorSpec) (*llm.Error, error) {
	if es.After < 0 {
		return nil, fmt.Errorf("after is %d, want 0 or more", es.After)
	}
	if es.RetryAfter < 0 {
		return nil, fmt.Errorf("retry_after is %v, want 0 or more", es.RetryAfter)
	}
	if es.Status != 0 && (es.Status < 100 || es.Status > 599) {
		return nil, fmt.Errorf("status %d is not an HTTP status", es.Status)
	}
	kind := es.Kind
	switch {
	case kind != "":
		if !isOneOf(kind, errorKinds) {
			return nil, fmt.Errorf("kind is not one of %s", joinNames(errorKinds))
		}
	case es.Status != 0:
		kind = llm.KindForStatus(es.Status)
	default:
		kind = llm.ServerError
	}
	msg := es.Message
	if msg == "" {
		msg = "scripted error"
	}
	return &llm.Error{Kind: kind, Status: es.Status, Provider: provider, Message: msg, RetryAfter: es.RetryAfter}, nil
}

var (
	toolChoices    = []llm.ToolChoice{llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired}
	phases         = []llm.Phase{llm.PhaseExplore, llm.PhaseSettle, llm.PhaseFinal}
	resultStatuses = []llm.ResultStatus{llm.ResultOK, llm.ResultError, llm.ResultAborted, llm.ResultNotRun, llm.ResultDuplicate, llm.ResultPending}
)

func checkExpect(e *Expect) error {
	if e.Result == nil && e.LastUser == nil && e.System == nil && e.ToolChoice == "" &&
		e.Tools == nil && e.ToolsInclude == nil && e.Phase == "" {
		return errors.New("expects nothing")
	}
	if e.ToolChoice != "" && !isOneOf(e.ToolChoice, toolChoices) {
		return fmt.Errorf("tool_choice is not one of %s", joinNames(toolChoices))
	}
	if e.Phase != "" && !isOneOf(e.Phase, phases) {
		return fmt.Errorf("phase is not one of %s", joinNames(phases))
	}
	if r := e.Result; r != nil && r.Status != "" && !isOneOf(r.Status, resultStatuses) {
		return fmt.Errorf("result status is not one of %s", joinNames(resultStatuses))
	}
	return nil
}

func isOneOf[T comparable](v T, set []T) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func joinNames[T ~string](set []T) string {
	names := make([]string, len(set))
	for i, s := range set {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// appendChunks appends the deltas of text, chunk bytes each (0: one delta),
// moving each cut back to a rune boundary so no delta splits a UTF-8
// sequence. A rune longer than chunk goes whole into its own delta.
func appendChunks(steps []step, kind llm.EventKind, index int, text string, chunk int) []step {
	if text == "" {
		return steps
	}
	if chunk <= 0 || chunk >= len(text) {
		return append(steps, step{kind: kind, index: index, delta: text})
	}
	for text != "" {
		n := min(chunk, len(text))
		for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		if n == 0 {
			_, n = utf8.DecodeRuneInString(text)
		}
		steps = append(steps, step{kind: kind, index: index, delta: text[:n]})
		text = text[n:]
	}
	return steps
}
