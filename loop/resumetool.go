package loop

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// resumeTool hands the answer to a pause that a tool made its own
// (tool.Resumer: a sub-agent's turn waiting for the user) and returns the
// call's result, or the tool's next pause on the same call.
func (r *run) resumeTool(p *Pause, a Answer) (llm.Result, *Pause) {
	fail := func(msg string) (llm.Result, *Pause) {
		return llm.Result{CallID: p.CallID, Name: p.Tool, Content: r.redact(msg), Status: llm.ResultError}, nil
	}
	t, ok := r.o.Tools.Get(p.Tool)
	if !ok {
		return fail(fmt.Sprintf("%s is no longer among this turn's tools, so the answer could not be passed on; carry on without its result", p.Tool))
	}
	rs, ok := t.(tool.Resumer)
	if !ok {
		return fail(fmt.Sprintf("%s cannot be resumed; carry on without its result", p.Tool))
	}
	ans, err := json.Marshal(a)
	if err != nil {
		return fail(fmt.Sprintf("the answer could not be passed to %s: %v", p.Tool, err))
	}
	c := r.findCall(p.CallID)
	args := json.RawMessage("{}")
	if c != nil && json.Valid([]byte(c.Args)) {
		args = json.RawMessage(c.Args)
	}
	out, err := rs.Resume(r.ctx, tool.Call{ID: p.CallID, Name: p.Tool, Args: args, Partial: io.Discard, ThreadID: r.st.ThreadID, TurnID: r.st.TurnID}, p.Resume, ans)
	r.parent.foldCharges()
	switch {
	case err != nil:
		return fail(fmt.Sprintf("%s failed: %v", p.Tool, err))
	case out.Pause != nil:
		next := *p
		next.Kind, next.Intro, next.Questions = out.Pause.Kind, out.Pause.Intro, out.Pause.Questions
		next.Payload, next.Resume, next.Args = out.Pause.Payload, out.Pause.Resume, ""
		if next.Kind == tool.PauseApproval {
			next.Args = string(next.Payload)
		}
		if next.Resume == nil {
			return fail(fmt.Sprintf("%s paused again without a state to resume from; carry on without its result", p.Tool))
		}
		return llm.Result{}, &next
	}
	status := llm.ResultOK
	if out.Failed {
		status = llm.ResultError
	}
	text := r.redact(out.Text)
	if text == "" {
		text = "(" + p.Tool + " returned no text)"
	}
	return llm.Result{CallID: p.CallID, Name: p.Tool, Content: text, Status: status, Meta: out.Meta}, nil
}
