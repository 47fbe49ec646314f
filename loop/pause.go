package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
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
// not the one waiting.
type PauseMismatchError struct {
	WantTurn, WantCall string
	GotTurn, GotCall   string
}

func (e *PauseMismatchError) Error() string {
	return fmt.Sprintf("loop: this answer is for turn %q call %q, but turn %q is waiting on call %q; answer that call",
		e.GotTurn, e.GotCall, e.WantTurn, e.WantCall)
}

// ErrNotPaused is returned when resuming a turn that is not paused.
var ErrNotPaused = errors.New("loop: the turn is not paused; there is nothing to answer")

// pause stops the turn on the honoured pause call: an in-process Waiter may
// answer at once; otherwise (or on its timeout) the turn ends paused with a
// State to resume from.
func (r *run) pause(res roundResult) (*Outcome, error) {
	pr := res.batch.Pause
	p := &Pause{
		ThreadID:  r.st.ThreadID,
		TurnID:    r.st.TurnID,
		CallID:    pr.CallID,
		Tool:      res.batch.Results[pr.Index].Name,
		Kind:      pr.Pause.Kind,
		Intro:     pr.Pause.Intro,
		Questions: pr.Pause.Questions,
	}
	r.st.Pause = p
	pp := pr.Pause
	r.emit(event.Event{Type: event.PauseRequested, CallID: p.CallID, Name: p.Tool, Pause: &pp})
	if w := r.o.Waiter; w != nil {
		wctx, cancel := r.ctx, context.CancelFunc(func() {})
		if r.o.PauseTimeout > 0 {
			wctx, cancel = context.WithTimeout(r.ctx, r.o.PauseTimeout)
		}
		ans, err := w.Wait(wctx, *p)
		cancel()
		if r.ctx.Err() != nil {
			return r.interrupted()
		}
		if err == nil {
			if err := r.applyAnswer(ans); err != nil {
				return r.fail(StopProviderError, err)
			}
			return r.loop()
		}
		// Timed out or no answer: the turn waits, resumable later.
	}
	o := r.outcome(StatusPaused, StopAwaitingUser)
	o.Pause = p
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
	if resultIndex(st.History, st.TurnStart, a.CallID) < 0 {
		return nil, fmt.Errorf("loop: pause state has no result for call %q; the state is damaged", a.CallID)
	}
	r := e.newRun(ctx, st)
	if err := r.applyAnswer(a); err != nil {
		return r.fail(StopProviderError, err)
	}
	return r.loop()
}

// applyAnswer replaces the pause's placeholder result by the answer and a
// directive to carry on (DESIGN §4); no item is added, so pairing holds.
func (r *run) applyAnswer(a Answer) error {
	p := r.st.Pause
	if p == nil {
		return ErrNotPaused
	}
	if a.TurnID != p.TurnID || a.CallID != p.CallID {
		return &PauseMismatchError{WantTurn: p.TurnID, WantCall: p.CallID, GotTurn: a.TurnID, GotCall: a.CallID}
	}
	i := resultIndex(r.st.History, r.st.TurnStart, p.CallID)
	if i < 0 {
		return fmt.Errorf("loop: no result for paused call %q", p.CallID)
	}
	text := answerText(p, a)
	r.st.Pause = nil
	if err := r.replace(i, llm.ToolResult(llm.Result{CallID: p.CallID, Name: p.Tool, Content: text, Status: llm.ResultOK})); err != nil {
		return err
	}
	r.emit(event.Event{Type: event.PauseResolved, CallID: p.CallID, Name: p.Tool, Content: text})
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
