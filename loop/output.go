package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// A structured answer (Options.Output): how the engine asks for it, checks
// it and hands it on. In native mode every request carries the schema
// (llm.Request.Output) and the provider constrains the answer's text to it;
// the text is checked when the model answers. In tool mode a tool named
// after the output is offered beside the others: its arguments are the
// answer and its call ends the turn. It is forced (llm.Request.ForceTool)
// when it is the only tool, in the forced final round, and once the model
// answered in text or called it with arguments the schema refused. Either
// way a wrong answer gets one repair round that says what was wrong; a
// second wrong one fails the turn with stop reason invalid_output.

// outputSpec is the engine's structured answer.
type outputSpec struct {
	llm.Output
	mode  llm.OutputMode
	check *tool.Validator
}

// newOutput checks o.Output and, in tool mode, adds its tool to o.Tools.
// It returns nil when the engine has no structured answer.
func newOutput(o *Options) (*outputSpec, error) {
	if o.Output == nil {
		return nil, nil
	}
	if err := o.Output.Check(); err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	mode, err := llm.ParseOutputMode(string(o.OutputMode))
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	if mode == "" {
		mode = llm.OutputModeOf(o.Model)
	}
	out := &outputSpec{Output: *o.Output, mode: mode}
	spec := tool.Spec{
		Name:        out.Name,
		Description: outputToolDescription(out.Description),
		Schema:      out.Schema,
		Access:      tool.ReadOnly,
	}
	if out.check, err = tool.NewValidator(spec); err != nil {
		return nil, fmt.Errorf("loop: output %s: the schema does not compile: %w", out.Name, err)
	}
	if mode != llm.OutputTool {
		return out, nil
	}
	if t, ok := o.Tools.Get(out.Name); ok {
		// The same output given to another engine on this set is fine;
		// a tool of the same name is not.
		if ot, ok := t.(*outputTool); ok && bytes.Equal(ot.spec.Schema, spec.Schema) {
			return out, nil
		}
		return nil, fmt.Errorf("loop: the output %q has the name of a tool of the turn; name the output otherwise", out.Name)
	}
	o.Tools.Add(&outputTool{spec: spec})
	return out, nil
}

func outputToolDescription(d string) string {
	const how = "Give your final answer by calling this tool once: its arguments are the answer, and the call ends the turn."
	if d == "" {
		return how
	}
	return strings.TrimRight(d, ". ") + ". " + how
}

// outputTool is the tool of tool mode. The dispatcher has checked its
// arguments against the schema before it runs; the engine takes the answer
// from the call, so the result only tells the model it arrived.
type outputTool struct{ spec tool.Spec }

func (t *outputTool) Spec() tool.Spec { return t.spec }

func (t *outputTool) Run(context.Context, tool.Call) (tool.Output, error) {
	return tool.Output{Text: "Answer received.", Terminate: true}, nil
}

// OutputError says why a structured answer was refused (stop reason
// invalid_output).
type OutputError struct {
	// Name is the output's name (Options.Output.Name).
	Name string
	// Detail says what was wrong, as the model was told.
	Detail string
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("the model's answer does not match the output schema %s, even after a repair round: %s; try a stronger model, or simplify the schema", e.Name, e.Detail)
}

// ErrNoOutputCall is the detail of a tool-mode turn whose model answered in
// text after it was told to call the output tool.
var ErrNoOutputCall = errors.New("the model answered in text instead of calling the output tool")

// askOutput sets the request's structured answer for a round of phase.
func (r *run) askOutput(q *llm.Request, phase llm.Phase) {
	q.Output, q.ForceTool = nil, ""
	out := r.e.out
	switch {
	case out == nil:
	case out.mode == llm.OutputNative:
		q.Output = &out.Output
	case phase == llm.PhaseFinal || r.st.OutputForced || onlyTool(q.Tools, out.Name):
		q.ForceTool = out.Name
		// For an adapter that cannot name the tool: a call is due.
		q.ToolChoice = llm.ToolChoiceRequired
	}
}

// onlyTool reports whether the tools offered are the one named.
func onlyTool(specs []llm.ToolSpec, name string) bool {
	return len(specs) == 1 && specs[0].Name == name
}

// keepInFinal names the tool whose calls still run in the forced final
// round: the output tool of tool mode, else none.
func (r *run) keepInFinal() string {
	if out := r.e.out; out != nil && out.mode == llm.OutputTool {
		return out.Name
	}
	return ""
}

// outputHint is added to the forced final round's directive in tool mode.
func (r *run) outputHint() string {
	if k := r.keepInFinal(); k != "" {
		return " Give the answer by calling " + k + ", the one tool left: its arguments are the answer."
	}
	return ""
}

// finishWith ends the turn with the model's text answer, checked first when
// the turn asks for a structured answer. It returns nil when the turn goes
// on for the repair round.
func (r *run) finishWith(reason StopReason, answer string) (*Outcome, error) {
	out := r.e.out
	if out == nil {
		return r.complete(reason, answer)
	}
	raw, err := out.answer(answer)
	if err == nil {
		// Text that matches is the answer, in tool mode too.
		return r.completeOutput(reason, raw)
	}
	if out.mode == llm.OutputTool {
		if !r.st.OutputForced {
			r.st.OutputForced = true
			r.warn(event.WarnOutputRepair, "the model answered in text; asking for the answer as a call of "+out.Name)
			if err := r.record(llm.Directive(outputCallDirective(out.Name))); err != nil {
				return r.fail(StopProviderError, err)
			}
			return nil, nil
		}
		return r.fail(StopInvalidOutput, &OutputError{Name: out.Name, Detail: ErrNoOutputCall.Error()})
	}
	if !r.st.OutputRepaired {
		r.st.OutputRepaired = true
		r.warn(event.WarnOutputRepair, "the answer does not match the output schema; asking once more with what was wrong")
		if err := r.record(llm.Directive(outputRepairDirective(out.Name, err))); err != nil {
			return r.fail(StopProviderError, err)
		}
		return nil, nil
	}
	return r.fail(StopInvalidOutput, &OutputError{Name: out.Name, Detail: err.Error()})
}

// outputCalled goes on after a round whose calls ran, in tool mode: a call
// of the output tool that passed the schema ends the turn with its
// arguments; one that did not gets the repair round (its result told the
// model what was wrong). It returns nil when the turn goes on; in the
// forced final round, whose only calls are of the output tool, it always
// ends the turn unless the repair round is due.
func (r *run) outputCalled(res roundResult, reason StopReason, final bool) (*Outcome, error) {
	out := r.e.out
	if out == nil || out.mode != llm.OutputTool || res.batch == nil {
		return nil, nil
	}
	b := res.batch
	if t := b.Terminate; t >= 0 && b.Results[t].Name == out.Name {
		if err := r.dropApprovals(b); err != nil {
			return r.fail(StopProviderError, err)
		}
		raw, err := compactObject(callArgs(res.calls, b.Results[t].CallID))
		if err != nil {
			return r.fail(StopInvalidOutput, &OutputError{Name: out.Name, Detail: err.Error()})
		}
		return r.completeOutput(reason, raw)
	}
	var refused *llm.Result
	for i := range b.Results {
		if b.Results[i].Name == out.Name && b.Results[i].IsError() {
			refused = &b.Results[i]
			break
		}
	}
	switch {
	case refused == nil && !final:
		return nil, nil
	case refused == nil:
		return r.fail(StopInvalidOutput, &OutputError{Name: out.Name, Detail: ErrNoOutputCall.Error()})
	case !r.st.OutputRepaired:
		r.st.OutputRepaired, r.st.OutputForced = true, true
		r.warn(event.WarnOutputRepair, "the call of "+out.Name+" did not match the output schema; asking once more")
		return nil, nil
	}
	return r.fail(StopInvalidOutput, &OutputError{Name: out.Name, Detail: refused.Content})
}

// completeOutput completes the turn with a structured answer.
func (r *run) completeOutput(reason StopReason, raw json.RawMessage) (*Outcome, error) {
	o := r.outcome(StatusCompleted, reason)
	o.Answer = string(raw)
	o.Output = raw
	r.finished(o)
	return o, nil
}

// answer checks a text answer against the schema and returns it compacted.
// A fenced code block around the JSON (```json … ```), which models write
// where the provider does not hold them to the format, is taken off.
func (o *outputSpec) answer(text string) (json.RawMessage, error) {
	text = unfence(strings.TrimSpace(text))
	if text == "" {
		return nil, errors.New("the answer is empty")
	}
	if err := o.check.Accept([]byte(text)); err != nil {
		var ae *tool.ArgsError
		if errors.As(err, &ae) {
			return nil, problems(ae)
		}
		return nil, err
	}
	return compactObject(text)
}

// problems lists what the validator found, one per line.
func problems(ae *tool.ArgsError) error {
	lines := make([]string, len(ae.Problems))
	for i, p := range ae.Problems {
		lines[i] = "- " + p.Message
	}
	return errors.New(strings.Join(lines, "\n"))
}

// unfence takes a Markdown code fence off s when s is one fenced block.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	if i := strings.IndexByte(body, '\n'); i >= 0 && !strings.ContainsAny(body[:i], "{[") {
		body = body[i+1:] // the info string: ```json
	}
	return strings.TrimSpace(body)
}

// compactObject returns args compacted, or an error when they are not JSON.
func compactObject(args string) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(args)); err != nil {
		return nil, fmt.Errorf("the answer is not valid JSON: %w", err)
	}
	return b.Bytes(), nil
}

// callArgs returns the arguments of the call with id.
func callArgs(calls []llm.Call, id string) string {
	for i := range calls {
		if calls[i].ID == id {
			return calls[i].Args
		}
	}
	return ""
}

func outputCallDirective(name string) string {
	return "[rein] Give your final answer now by calling " + name + ": its arguments are the answer. Do not answer in text."
}

func outputRepairDirective(name string, err error) string {
	return "[rein] Your answer does not match the JSON schema it must follow (" + name + "):\n" + err.Error() +
		"\nAnswer again with only the corrected JSON object, nothing around it."
}
