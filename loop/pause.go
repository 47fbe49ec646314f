package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/dispatch"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

// Answer is the user's answer to a pause, keyed by (TurnID, CallID).
type Answer struct {
	TurnID string `json:"turn_id"`
	CallID string `json:"call_id"`
	// Answers answer questions by id; Text is a free answer to all of them.
	Answers []QuestionAnswer `json:"answers,omitempty"`
	Text    string           `json:"text,omitempty"`
	// Decision answers an approval: approve, approve_thread or deny.
	Decision Decision `json:"decision,omitempty"`
}

// QuestionAnswer answers one question.
type QuestionAnswer struct {
	QuestionID string `json:"question_id"`
	Text       string `json:"text"`
}

// Decision answers an approval pause.
type Decision string

// Approval decisions (DESIGN §7.4).
const (
	Approve       Decision = "approve"
	ApproveThread Decision = "approve_thread"
	Deny          Decision = "deny"
)

// PauseMismatchError is returned when an answer names a turn or call that is
// not the one waiting (package record's).
type PauseMismatchError = record.PauseMismatchError

// ErrNotPaused is returned when resuming a turn that is not paused.
var ErrNotPaused = record.ErrNotPaused

// pause stops the turn for what the round asks of the user: each call
// awaiting approval, in call order, then the honoured ask_user and the
// pauses of tools that resume themselves (sub-agents), in call order. An
// in-process Waiter may answer at once; otherwise (or on its timeout) the
// turn ends paused with a State to resume from. It returns nil when every
// pause was answered and the turn goes on.
func (r *run) pause(res roundResult) (*Outcome, error) {
	var queue []Pause
	for _, i := range res.batch.Approvals {
		c := res.calls[i]
		// Intro: why the call's arguments need approval, when they do.
		queue = append(queue, Pause{ThreadID: r.st.ThreadID, TurnID: r.st.TurnID, CallID: c.ID, Tool: c.Name, Kind: tool.PauseApproval, Args: c.Args, Intro: res.batch.Why[i]})
	}
	if pr := res.batch.Pause; pr != nil {
		queue = append(queue, r.toolPause(res, pr))
	}
	for i := range res.batch.MorePauses {
		// Two sub-agents waiting for the user: each is asked in turn.
		queue = append(queue, r.toolPause(res, &res.batch.MorePauses[i]))
	}
	r.st.Pause, r.st.Pending = &queue[0], queue[1:]
	return r.waitPauses()
}

// toolPause is the pause a call's tool asked for.
func (r *run) toolPause(res roundResult, pr *dispatch.PauseRequest) Pause {
	var args string
	if pr.Pause.Resume != nil && pr.Pause.Kind == tool.PauseApproval {
		// A tool's own approval (a sub-agent's call): what the user
		// approves is in its payload, which the clients that show a
		// call's arguments show then.
		args = string(pr.Pause.Payload)
	}
	return Pause{
		Args:      args,
		ThreadID:  r.st.ThreadID,
		TurnID:    r.st.TurnID,
		CallID:    pr.CallID,
		Tool:      res.batch.Results[pr.Index].Name,
		Kind:      pr.Pause.Kind,
		Intro:     pr.Pause.Intro,
		Questions: pr.Pause.Questions,
		Payload:   pr.Pause.Payload,
		Resume:    pr.Pause.Resume,
	}
}

// waitPauses presents the current pause and those queued after it. It
// returns nil when all were answered in process.
func (r *run) waitPauses() (*Outcome, error) {
	for r.st.Pause != nil {
		p := r.st.Pause
		tp := &tool.Pause{Kind: p.Kind, Intro: p.Intro, Questions: p.Questions, Payload: p.Payload}
		if p.Kind == tool.PauseApproval && p.Payload == nil {
			tp.Payload, _ = json.Marshal(map[string]string{"tool": p.Tool, "args": p.Args})
		}
		r.emit(event.Event{Type: event.PauseRequested, CallID: p.CallID, Name: p.Tool, Args: p.Args, Pause: tp})
		w := r.o.Waiter
		if w == nil {
			return r.paused()
		}
		wctx, cancel := r.ctx, context.CancelFunc(func() {})
		if r.o.PauseTimeout > 0 {
			wctx, cancel = context.WithTimeout(r.ctx, r.o.PauseTimeout)
		}
		ans, err := w.Wait(wctx, *p)
		cancel()
		if r.ctx.Err() != nil {
			return r.interrupted()
		}
		if err != nil {
			// Timed out or no answer: the turn waits, resumable later.
			return r.paused()
		}
		if err := r.applyAnswer(ans); err != nil {
			var mm *PauseMismatchError
			if errors.As(err, &mm) || errors.Is(err, ErrNoDecision) {
				return r.fail(StopProviderError, fmt.Errorf("loop: the waiter answered the wrong pause: %w", err))
			}
			return r.fail(StopProviderError, err)
		}
	}
	return nil, nil
}

func (r *run) paused() (*Outcome, error) {
	// The State is handed out (and marshalled): it holds the whole
	// context, as it says.
	r.st.fold()
	o := r.outcome(StatusPaused, StopAwaitingUser)
	o.Pause = r.st.Pause
	o.State = r.st
	r.finished(o)
	return o, nil
}

// Resume answers a paused turn and runs it on, with its budgets as they
// were. The answer must name the waiting turn and call; anything else is
// rejected with a *PauseMismatchError and changes nothing.
func (e *Engine) Resume(ctx context.Context, st *State, a Answer) (*Outcome, error) {
	if st == nil || st.Pause == nil {
		return nil, ErrNotPaused
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("loop: pause state version %d is not supported (want %d)", st.Version, stateVersion)
	}
	if a.TurnID != st.TurnID || a.CallID != st.Pause.CallID {
		return nil, &PauseMismatchError{WantTurn: st.TurnID, WantCall: st.Pause.CallID, GotTurn: a.TurnID, GotCall: a.CallID}
	}
	if st.Pause.Kind == tool.PauseApproval && a.Decision == "" {
		return nil, ErrNoDecision
	}
	if resultIndex(st.History, st.turn(), a.CallID) < 0 {
		return nil, fmt.Errorf("loop: pause state has no result for call %q; the state is damaged", a.CallID)
	}
	r := e.newRun(ctx, st)
	if err := r.applyAnswer(a); err != nil {
		return r.fail(StopProviderError, err)
	}
	if out, err := r.waitPauses(); out != nil {
		return out, err
	}
	return r.loop()
}

// ErrNoDecision is returned when an approval is answered without a
// decision.
var ErrNoDecision = errors.New("loop: answer an approval with a decision: approve, approve_thread or deny")

// applyAnswer replaces the pause's placeholder result by the answer — for
// ask_user the user's words and a directive to carry on (DESIGN §4); for an
// approval the call's own result, or the denial — and moves to the next
// queued pause. No item is added, so pairing holds.
func (r *run) applyAnswer(a Answer) error {
	p := r.st.Pause
	if p == nil {
		return ErrNotPaused
	}
	if a.TurnID != p.TurnID || a.CallID != p.CallID {
		return &PauseMismatchError{WantTurn: p.TurnID, WantCall: p.CallID, GotTurn: a.TurnID, GotCall: a.CallID}
	}
	i := resultIndex(r.st.History, r.st.turn(), p.CallID)
	if i < 0 {
		return fmt.Errorf("loop: no result for paused call %q", p.CallID)
	}
	var res llm.Result
	switch {
	case p.Resume != nil:
		// The tool's own pause (a sub-agent waiting for the user): the
		// answer goes back to it, and it may pause again.
		out, again := r.resumeTool(p, a)
		if again != nil {
			r.emit(event.Event{Type: event.PauseResolved, CallID: p.CallID, Name: p.Tool, Status: string(a.Decision)})
			r.st.Pause = again
			return nil
		}
		res = out
	case p.Kind == tool.PauseApproval:
		var err error
		if res, err = r.decide(p, a); err != nil {
			return err
		}
	default:
		res = llm.Result{CallID: p.CallID, Name: p.Tool, Content: answerText(p, a), Status: llm.ResultOK}
	}
	if err := r.replace(i, llm.ToolResult(r.cap(res))); err != nil {
		return err
	}
	r.emit(event.Event{Type: event.PauseResolved, CallID: p.CallID, Name: p.Tool, Content: res.Content, Status: string(a.Decision)})
	r.st.Pause = nil
	if len(r.st.Pending) > 0 {
		next := r.st.Pending[0]
		r.st.Pause, r.st.Pending = &next, r.st.Pending[1:]
	}
	return nil
}

// decide carries out an approval decision: the approved call runs now (the
// dispatcher's checks, deadline and cancellation as in a round), a denied
// one is answered with the denial.
func (r *run) decide(p *Pause, a Answer) (llm.Result, error) {
	switch a.Decision {
	case Deny:
		text := fmt.Sprintf("The user denied running %s. Do not retry it; continue without it, or ask the user what to do instead.", p.Tool)
		if a.Text != "" {
			text += " The user said: " + a.Text
		}
		return llm.Result{CallID: p.CallID, Name: p.Tool, Content: text, Status: llm.ResultError}, nil
	case Approve, ApproveThread:
	default:
		return llm.Result{}, ErrNoDecision
	}
	if a.Decision == ApproveThread {
		r.approve(p.Tool)
	}
	c := r.findCall(p.CallID)
	if c == nil {
		return llm.Result{}, fmt.Errorf("loop: no call %q in this turn; the state is damaged", p.CallID)
	}
	round := r.e.disp.Begin(r.ctx, dispatch.RoundInfo{ThreadID: r.st.ThreadID, TurnID: r.st.TurnID, Round: r.st.Rounds, Approved: true})
	round.Add(*c)
	b := round.Finish()
	r.parent.foldCharges()
	return b.Results[0], nil
}

// findCall returns the call with id among this turn's assistant items.
func (r *run) findCall(id string) *llm.Call {
	h := r.st.History
	for i := len(h) - 1; i >= r.st.turn(); i-- {
		if h[i].Role != llm.RoleAssistant {
			continue
		}
		for _, p := range h[i].Parts {
			if p.Kind == llm.PartCall && p.Call != nil && p.Call.ID == id {
				return p.Call
			}
		}
	}
	return nil
}

// dropApprovals answers the calls still awaiting approval when the turn
// ends another way (a terminating result): they did not run.
func (r *run) dropApprovals(b *dispatch.Batch) error {
	for _, idx := range b.Approvals {
		res := b.Results[idx]
		if i := resultIndex(r.st.History, r.st.turn(), res.CallID); i >= 0 {
			res.Content = "not run: the turn ended before the user approved it"
			res.Status = llm.ResultNotRun
			if err := r.replace(i, llm.ToolResult(res)); err != nil {
				return err
			}
		}
	}
	return nil
}

// answerText renders an answer for the model: one line per question, then
// the directive to continue the original request.
func answerText(p *Pause, a Answer) string {
	var b strings.Builder
	switch {
	case a.Decision != "":
		fmt.Fprintf(&b, "User decision: %s", a.Decision)
		if a.Text != "" {
			fmt.Fprintf(&b, " (%s)", a.Text)
		}
	case len(a.Answers) > 0:
		b.WriteString("User answered:")
		prompts := make(map[string]string, len(p.Questions))
		for _, q := range p.Questions {
			prompts[q.ID] = q.Prompt
		}
		for _, qa := range a.Answers {
			prompt := prompts[qa.QuestionID]
			if prompt == "" {
				prompt = qa.QuestionID
			}
			v := strings.TrimSpace(qa.Text)
			if v == "" {
				v = "(skipped)"
			}
			fmt.Fprintf(&b, "\n- %s\n  -> %s", prompt, v)
		}
	default:
		v := strings.TrimSpace(a.Text)
		if v == "" {
			v = "(empty reply)"
		}
		b.WriteString("User answered: " + v)
	}
	b.WriteString("\n\n" + resumeDirective)
	return b.String()
}

// QuestionIDs fills missing question ids with q1, q2, … in order (DESIGN §4).
func QuestionIDs(qs []tool.Question) {
	for i := range qs {
		if qs[i].ID == "" {
			qs[i].ID = fmt.Sprintf("q%d", i+1)
		}
	}
}
