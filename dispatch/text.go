package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
)

// This file holds what the model reads when a call did not simply succeed.
// Each text says what happened and what to do next, since the model acts on
// nothing else.

const noOutputText = "(the tool finished and returned no output)"

// errorText is the JSON object of a failed call: {"error", "detail",
// "partial"}, the last two when not empty.
func errorText(msg, detail, partial string) string {
	v := struct {
		Error   string `json:"error"`
		Detail  string `json:"detail,omitempty"`
		Partial string `json:"partial_output,omitempty"`
	}{msg, detail, partial}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// The model reads this; \u003c for < only gets in its way.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return msg
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func tooManyText(index, limit int) string {
	return fmt.Sprintf("not run: this was call %d of the round and at most %d calls run per round; "+
		"if it is still needed, call it again in the next round", index+1, limit)
}

func tooManyWarning(limit int) string {
	return fmt.Sprintf("the model made more than %d calls in one round; the calls after call %d were answered as not run", limit, limit)
}

func duplicateText(first *call) string {
	return fmt.Sprintf("duplicate: this call has the same tool and arguments as call %s earlier in this round, "+
		"which ran once; its result (call id %s) answers this one too", first.llm.ID, first.llm.ID)
}

func secondPauseText(first *call) string {
	return fmt.Sprintf("not run: only one %s call is honoured per round (call %s was); "+
		"ask all questions in one call", first.llm.Name, first.llm.ID)
}

func pauseAfterTerminateText(by *call) string {
	return fmt.Sprintf("not run: call %s (%s) ended the turn", by.llm.ID, by.llm.Name)
}

func blockedText(d *call) string {
	return fmt.Sprintf("not run: it touches what call %s (%s) was using, and that call did not finish; "+
		"check the state before calling it again", d.llm.ID, d.llm.Name)
}

// notStarted answers a call the cancellation reached before it started.
func (r *Round) notStarted() outcome {
	return outcome{res: llm.Result{Status: llm.ResultAborted,
		Content: fmt.Sprintf("not run: %s before this call started", r.stopReason())}}
}

// abortedResult answers a running call the cancellation stopped: how long
// it ran and what it had written (the tool's own text when it wrote none).
func (r *Round) abortedResult(k *call, end time.Time, text string) llm.Result {
	r.mu.Lock()
	start := k.timing.Start
	r.mu.Unlock()
	msg := fmt.Sprintf("%s after %s", r.stopReason(), seconds(end.Sub(start)))
	partial := k.partial.String()
	if partial == "" {
		partial = text
	}
	if partial != "" {
		msg += "; partial output:\n" + r.d.redact(partial)
	}
	return llm.Result{Status: llm.ResultAborted, Content: msg}
}

// stopReason says who stopped the round: the user (a plain cancel) or
// something else (a deadline of the turn).
func (r *Round) stopReason() string {
	cause := context.Cause(r.ctx)
	if cause == nil || errors.Is(cause, context.Canceled) {
		return "aborted by user"
	}
	return "aborted (" + r.d.redact(cause.Error()) + ")"
}

// timeoutText answers a call that outlived its deadline; abandoned says it
// also ignored the cancellation.
func (r *Round) timeoutText(k *call, abandoned bool) string {
	detail := "the call was cancelled at the deadline; ask for less (a narrower query, a smaller file range) or try another way"
	if abandoned {
		detail = "the call ignored the cancellation and was abandoned; its effects, if any, are unknown: check before retrying"
	}
	return errorText(fmt.Sprintf("%s did not finish within its deadline of %s", k.llm.Name, k.timeout),
		detail, r.d.redact(k.partial.String()))
}

// seconds formats a duration as "3.2s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// approvalText is the placeholder of a call waiting for approval.
func approvalText(name string) string {
	return fmt.Sprintf("[awaiting the user's approval to run %s]", name)
}

// refusedText answers a call the approval policy refuses outright.
// why is why this call needed approval when its arguments made it ask.
func refusedText(name, why string) string {
	if why != "" {
		why = " (" + strings.TrimSuffix(why, ".") + ")"
	}
	return errorText(fmt.Sprintf("%s was not run: it needs the user's approval%s, and this thread's approval policy never asks", name, why),
		"do the task without this tool, or tell the user it needs approval to run", "")
}
