package loop

import (
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// forcedFinish runs the forced final round (DESIGN §2.2): a finish
// directive, tool definitions kept with tool_choice none, any call returned
// anyway ignored. Its text is the answer and the turn completes with the
// reason it was forced.
func (r *run) forcedFinish(reason StopReason) (*Outcome, error) {
	r.warn(event.WarnForced, "answering now with what has been gathered ("+string(reason)+")")
	if err := r.record(llm.Directive(finishDirective(reason))); err != nil {
		return r.fail(StopProviderError, err)
	}
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
		// Cut at its own deadline: what arrived is the answer, if anything
		// did.
		if strings.TrimSpace(answer) == "" {
			return r.fail(StopForcedTime, ErrTimeBudget)
		}
		r.warn(event.WarnDeadline, "the time budget ran out while the model was answering; the answer is cut short")
		return r.complete(StopForcedTime, answer)
	}
	if strings.TrimSpace(answer) == "" {
		// Never a canned answer reported as success.
		return r.fail(StopEmptyAnswer, ErrEmptyAnswer)
	}
	return r.complete(reason, answer)
}
