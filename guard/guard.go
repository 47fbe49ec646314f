// Package guard is the contract between the turn engine and a context
// guard (DESIGN §8): what the engine asks of the keeper of a model's context
// window (Window, Guard) and what a guard sees of a turn and may change
// (History).
//
// It sits below both sides so neither imports the other: package loop
// calls a Guard and implements History (loop.History); package window
// implements Window and Guard and calls History to shorten or compact. A
// compaction goes engine → guard → engine (the summary is a model call the
// engine makes and counts) through these interfaces, not through imports.
package guard

import (
	"context"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// Window keeps a turn's requests within the model's context window. One
// Window serves any number of turns at once. A Window that reads requests
// through Len, At and All says so (llm.HistoryReader); the engine then
// may hand it requests whose first items are in Request.History, and
// otherwise gives every item in Items.
type Window interface {
	// Guard returns the guard of one run of a turn (started, resumed, or a
	// manual compaction).
	Guard() Guard
	// Cap returns a tool result shortened to be recorded: head and tail
	// kept, a marker between (DESIGN §8).
	Cap(res llm.Result) llm.Result
}

// Guard watches one turn's context. The engine calls it from the turn's
// goroutine, one call at a time.
type Guard interface {
	// Fit is called before each model request. It may shorten items or
	// compact the history through h, and returns an error (of kind
	// llm.ContextWindowExceeded) rather than let a request known to be too
	// big go out. With force it compacts whatever the count says: the
	// provider refused the request as too long, or the user asked.
	Fit(ctx context.Context, h History, force bool) error
	// Observe is called after each model request with the usage the
	// provider reported (zero when none). It returns the request's budget
	// report for the Context event, or nil.
	Observe(u llm.Usage) *event.ContextReport
}

// History is what a Guard sees of a turn and may change: the request about
// to be sent, whose items (History, then Items: Request.Len, At) are the
// turn's context (shared, not copied). Indexes count those items in that
// order. It is valid only during the Fit it was passed to.
type History interface {
	// Request returns the request about to be sent. Its items are the
	// context; the guard changes them only through History's methods,
	// which may move them (read them again after a change, through the
	// same request).
	Request() *llm.Request
	// TurnStart returns the index among Request()'s items of the turn's
	// first item.
	TurnStart() int
	// Edited returns the indexes of items replaced since the guard's last
	// Fit (a pause placeholder answered), so a guard counting
	// incrementally knows what to count again.
	Edited() []int
	// Shorten replaces item i for the rest of the turn (a long old tool
	// result cut down); the item keeps its role and the call it answers.
	Shorten(i int, it llm.Item) error
	// Summarize makes one model call with the turn's model outside the
	// round count (phase llm.PhaseCompact) and returns its text; its usage
	// counts toward the turn's budgets.
	Summarize(ctx context.Context, req *llm.Request) (string, error)
	// Compact records summary as a compaction (llm.OriginCompaction) and
	// then the items from keepFrom on again, after it; requests start at
	// the compaction from then on. keepFrom must start a self-contained
	// tail: every result in it answers a call in it.
	Compact(summary llm.Item, keepFrom int) error
	// Warn emits a guard warning (event.WarnGuard).
	Warn(msg string)
}
