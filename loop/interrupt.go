package loop

import (
	"fmt"

	"github.com/reinhq/rein/llm"
)

// interrupted ends a cancelled turn: every call left without a result (or
// with a pause placeholder) is answered as aborted, and a marker tells the
// model in later turns that this one was cut (DESIGN §2.5).
func (r *run) interrupted() (*Outcome, error) {
	after := r.st.Elapsed + r.o.Now().Sub(r.began)
	text := fmt.Sprintf("aborted by user after %.1fs", after.Seconds())
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, c := range OpenCalls(r.st.TurnItems()) {
		keep(r.record(llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: text, Status: llm.ResultAborted})))
	}
	// Placeholders of pauses (ask_user, approvals) never answered.
	for i := r.st.turn(); i < len(r.st.History); i++ {
		if res := r.st.History[i].Result(); r.st.History[i].Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending {
			keep(r.replace(i, llm.ToolResult(llm.Result{CallID: res.CallID, Name: res.Name, Content: text + " before the user answered", Status: llm.ResultAborted})))
		}
	}
	r.st.Pause, r.st.Pending = nil, nil
	keep(r.record(llm.Item{Role: llm.RoleUser, Origin: llm.OriginMarker, Parts: []llm.Part{{Kind: llm.PartText, Text: interruptMarker(after)}}}))
	o := r.outcome(StatusInterrupted, StopCancelled)
	o.Err = firstErr
	r.finished(o)
	return o, nil
}

// OpenCalls returns the calls in items that have no result yet, in order
// (llm.OpenCalls, which the store's normalization uses too).
func OpenCalls(items []llm.Item) []llm.Call { return llm.OpenCalls(items) }

// resultIndex finds the tool item answering callID at or after from, in
// h (a State's History, from its turn()).
func resultIndex(h []llm.Item, from int, callID string) int {
	for i := len(h) - 1; i >= from; i-- {
		if h[i].Role != llm.RoleTool {
			continue
		}
		if res := h[i].Result(); res != nil && res.CallID == callID {
			return i
		}
	}
	return -1
}
