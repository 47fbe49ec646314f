package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
)

// OriginCompaction marks a compaction (llm.OriginCompaction).
const OriginCompaction = llm.OriginCompaction

// PhaseCompact is the phase of the call that writes a handoff summary
// (llm.PhaseCompact).
const PhaseCompact = llm.PhaseCompact

// Window keeps a turn's requests within the model's context window
// (guard.Window; package window implements it).
type Window = guard.Window

// Guard watches one turn's context (guard.Guard).
type Guard = guard.Guard

// History is what a Guard sees of a turn and may change (guard.History):
// the request about to be sent, whose items (History, then Items) are the
// turn's context (shared, not copied).
type History struct {
	r   *run
	req *llm.Request
}

var _ guard.History = (*History)(nil)

// Request returns the request about to be sent. Its items are the
// context; the guard must not modify them except through History's
// methods.
func (h *History) Request() *llm.Request { return h.req }

// TurnStart returns the index among Request()'s items of the turn's first
// item.
func (h *History) TurnStart() int { return h.r.st.TurnStart }

// Edited returns the indexes of items replaced since the guard's last Fit
// (a pause placeholder answered), so a guard counting incrementally knows
// what to count again.
func (h *History) Edited() []int { return h.r.edits }

// Shorten replaces item i for the rest of the turn (a long old tool result
// cut down). It is not journaled: the store keeps the item as recorded, and
// a later turn's guard shortens it again if it must. An item of the
// caller's history held apart (the request's History) is never written:
// the context is copied into the engine's own slice first, and the request
// sends it from there.
func (h *History) Shorten(i int, it llm.Item) error {
	st := h.r.st
	if n := st.size(); i < 0 || i >= n {
		return fmt.Errorf("loop: shorten: item %d out of range (history of %d)", i, n)
	}
	old := st.at(i)
	if it.Role != old.Role || old.Role == llm.RoleTool && (it.Result() == nil || old.Result() == nil || it.Result().CallID != old.Result().CallID) {
		return fmt.Errorf("loop: shorten: item %d must keep its role and the call it answers", i)
	}
	if i < len(st.prior) {
		st.fold()
		h.req.History, h.req.Items = nil, st.History
	}
	i -= len(st.prior)
	old = &st.History[i]
	it.ID, it.TurnID, it.Origin = old.ID, old.TurnID, old.Origin
	st.History[i] = it
	// Shortened for this turn only: the next turn starts from the
	// thread's items as recorded.
	h.r.st.carry.dirty = true
	return nil
}

// Summarize makes one model call with the engine's model outside the
// round count (phase compact) and returns its text. Its usage counts
// toward the turn's budgets; nothing it streams is shown as an answer.
func (h *History) Summarize(ctx context.Context, req *llm.Request) (string, error) {
	r := h.r
	req.TurnID, req.Phase = r.st.TurnID, PhaseCompact
	req.Round = r.st.Rounds + 1
	ctx, cancel := r.streamContext(ctx, false)
	if cancel != nil {
		defer cancel()
	}
	s, err := r.o.Model.Stream(ctx, req)
	if err != nil {
		return "", err
	}
	resp, err := collect(s, r.o.MaxRoundOutput, r.o.MaxCallArgs)
	if err != nil {
		return "", err
	}
	r.addUsage(resp.Usage)
	var b strings.Builder
	for _, p := range resp.Parts {
		if p.Kind == llm.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// Compact records summary as a compaction (Origin OriginCompaction, a
// user-role item) and then the items from keepFrom on again, after it;
// from now on requests start at the compaction. The kept items' calls get
// fresh ids (their results follow), so call ids stay unique in the thread.
// keepFrom must start a self-contained tail: every result in it answers a
// call in it.
func (h *History) Compact(summary llm.Item, keepFrom int) error {
	r := h.r
	// The kept items are copied below; the context as one slice first
	// (what the compaction replaces is left as it was).
	r.st.fold()
	h.req.History, h.req.Items = nil, r.st.History
	old := r.st.History
	if keepFrom < 0 || keepFrom > len(old) {
		return fmt.Errorf("loop: compact: keepFrom %d out of range (history of %d)", keepFrom, len(old))
	}
	summary.ID, summary.Role, summary.Origin = "", llm.RoleUser, OriginCompaction
	if len(summary.Parts) == 0 {
		return errors.New("loop: compact: the summary is empty")
	}
	// Copy the kept items with fresh call ids before changing anything, so
	// a tail that would break the invariants leaves the history as it was.
	kept := make([]llm.Item, 0, len(old)-keepFrom+1)
	kept = append(kept, summary)
	ids := make(map[string]string)
	for _, it := range old[keepFrom:] {
		it.ID = ""
		parts := make([]llm.Part, len(it.Parts))
		copy(parts, it.Parts)
		for j := range parts {
			switch p := &parts[j]; {
			case p.Kind == llm.PartCall && p.Call != nil:
				c := *p.Call
				c.ID = NewID("call")
				ids[p.Call.ID] = c.ID
				p.Call = &c
			case p.Kind == llm.PartResult && p.Result != nil:
				res := *p.Result
				if id, ok := ids[res.CallID]; ok {
					res.CallID = id
				}
				p.Result = &res
			}
		}
		it.Parts = parts
		kept = append(kept, it)
	}
	if err := llm.CheckHistory(kept); err != nil {
		return fmt.Errorf("loop: compact: the kept items from %d are not self-contained: %w", keepFrom, err)
	}
	// A fresh slice: the old history stays intact for whoever holds it
	// (the thread's caller, earlier turns), and requests start at the
	// compaction. The call ids of the history before it stay in the set.
	seen := r.callIDs()
	for _, id := range ids {
		seen[id] = struct{}{}
	}
	r.st.History = make([]llm.Item, 0, len(kept)+128)
	r.st.TurnStart = 0
	r.edits = r.edits[:0]
	var first error
	for _, it := range kept {
		if err := r.record(it); err != nil && first == nil {
			first = err
		}
	}
	h.req.History, h.req.Items = nil, r.st.History
	return first
}

// Warn emits a guard warning (event.WarnGuard).
func (h *History) Warn(msg string) { h.r.warn(event.WarnGuard, msg) }

// fit runs the guard before a request.
func (r *run) fit(req *llm.Request, force bool) error {
	if r.guard == nil {
		return nil
	}
	h := History{r: r, req: req}
	err := r.guard.Fit(r.ctx, &h, force)
	r.edits = r.edits[:0]
	return err
}

// observe reports the context after a request.
func (r *run) observe(u llm.Usage, round int) {
	if r.guard == nil {
		return
	}
	if rep := r.guard.Observe(u); rep != nil && r.ev != nil {
		r.emit(event.Event{Type: event.Context, Round: round, Context: rep})
	}
}

// cap shortens a result before it is recorded.
func (r *run) cap(res llm.Result) llm.Result {
	if r.o.Window != nil {
		return r.o.Window.Cap(res)
	}
	return res
}

// retryCompacted handles a provider's context-length error on a round that
// left no trace: the history is compacted once and the round is tried
// again. It reports whether the turn should go on.
func (r *run) retryCompacted(phase llm.Phase, res roundResult) bool {
	if r.guard == nil || res.counted || r.compacted || !errors.Is(res.err, llm.ContextWindowExceeded) {
		return false
	}
	r.compacted = true
	r.warn(event.WarnGuard, "the provider refused the request as too long for the model; compacting the history and trying again")
	if err := r.fit(r.request(phase), true); err != nil {
		r.warn(event.WarnGuard, "compaction failed: "+r.redact(err.Error()))
		return false
	}
	return true
}

// ContextOf returns the history a new turn of a thread sends, given the
// thread's items in order: from the latest compaction on, without earlier
// turns' directives (`rein context` counts it).
func ContextOf(items []llm.Item) []llm.Item { return contextOf(items) }

// StopCompacted is the stop reason of a manual compaction (Engine.Compact).
const StopCompacted StopReason = "compacted"

// Compact compacts a thread's history now, outside any turn (`/compact` in
// the chat, `thread/compact` in the server): the model writes a handoff
// summary that is recorded as a compaction item (Journal, events), and the
// thread's next turns start from it. t.Input must be empty; the outcome's
// Items are the compaction, its Usage the summary's. It needs
// Options.Window.
func (e *Engine) Compact(ctx context.Context, t Turn) (*Outcome, error) {
	if e.o.Window == nil {
		return nil, errors.New("loop: Compact needs Options.Window (package window)")
	}
	if len(t.Input) > 0 {
		return nil, errors.New("loop: Compact takes no input; run a turn for that")
	}
	id := t.ID
	if id == "" {
		id = NewID("turn")
	}
	st := &State{Version: stateVersion, ThreadID: t.ThreadID, TurnID: id, Approved: t.Approved}
	e.begin(st, t)
	if st.size() == 0 {
		return nil, errors.New("loop: the thread has no history to compact")
	}
	r := e.newRun(ctx, st)
	r.emit(event.Event{Type: event.TurnStarted})
	if err := r.fit(r.request(llm.PhaseExplore), true); err != nil {
		return r.fail(StopProviderError, err)
	}
	return r.complete(StopCompacted, "")
}
