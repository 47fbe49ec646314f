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
	if res.journalErr != nil {
		return r.fail(StopProviderError, res.journalErr)
	}
	if res.interrupted || r.ctx.Err() != nil {
		return r.interrupted()
	}
	if res.err != nil {
		return r.fail(StopProviderError, res.err)
	}
	answer := r.answer(res.visible)
	if strings.TrimSpace(answer) == "" {
		// Never a canned answer reported as success.
		return r.fail(StopEmptyAnswer, ErrEmptyAnswer)
	}
	return r.complete(reason, answer)
}
