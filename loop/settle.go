package loop

import (
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// forcedFinish runs the forced final round (DESIGN §2.2): a finish
// directive, tool definitions kept with tool_choice none, any call returned
// anyway ignored. Its text is the answer and the turn completes with the
// reason it was forced. A turn that asks for a structured answer
// (output.go) may take one more final round to repair it; in tool mode the
// round forces the output tool's call, the one call that runs.
func (r *run) forcedFinish(reason StopReason) (*Outcome, error) {
	r.warn(event.WarnForced, "answering now with what has been gathered ("+string(reason)+")")
	if err := r.record(llm.Directive(finishDirective(reason) + r.outputHint())); err != nil {
		return r.fail(StopProviderError, err)
	}
	for {
		res := r.round(llm.PhaseFinal)
		if res.counted {
			r.st.Rounds++
		}
		answer := r.answer(res.visible)
		switch res.end {
		case endJournalFailed, endRefused, endFailed:
			return r.fail(StopProviderError, res.err)
		case endInterrupted:
			return r.interrupted()
		case endCapped:
			r.warn(event.WarnOutputCap, res.err.Error())
			return r.fail(StopOutputCapped, res.err)
		case endTimedOut:
			// Cut at its own deadline: what arrived is the answer, if
			// anything did.
			if strings.TrimSpace(answer) == "" {
				return r.fail(StopForcedTime, ErrTimeBudget)
			}
			r.warn(event.WarnDeadline, "the time budget ran out while the model was answering; the answer is cut short")
			if out, err := r.finishWith(StopForcedTime, answer); out != nil {
				return out, err
			}
			continue
		case endCalls:
			// Only the output tool's calls run here (keepInFinal).
			if out, err := r.outputCalled(res, reason, true); out != nil {
				return out, err
			}
			continue
		}
		if strings.TrimSpace(answer) == "" {
			// Never a canned answer reported as success.
			return r.fail(StopEmptyAnswer, ErrEmptyAnswer)
		}
		if out, err := r.finishWith(reason, answer); out != nil {
			return out, err
		}
	}
}
