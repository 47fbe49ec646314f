package llm

import "iter"

// Len returns the number of items the request sends: History's and Items'.
func (r *Request) Len() int { return len(r.History) + len(r.Items) }

// At returns item i of what the request sends, History's items first. The
// item is the caller's: read it, do not change it. It panics when i is out
// of range, as indexing a slice does.
func (r *Request) At(i int) *Item {
	if i < len(r.History) {
		return &r.History[i]
	}
	return &r.Items[i-len(r.History)]
}

// All returns the items the request sends, History's then Items', with
// their index in that order; the items are the caller's, as At's.
func (r *Request) All() iter.Seq2[int, *Item] {
	return func(yield func(int, *Item) bool) {
		for i := range r.History {
			if !yield(i, &r.History[i]) {
				return
			}
		}
		n := len(r.History)
		for i := range r.Items {
			if !yield(n+i, &r.Items[i]) {
				return
			}
		}
	}
}

// Joined returns the items the request sends as one slice: Items itself
// when History is empty, otherwise a new slice holding both. It is for
// callers that keep the items (a recording of the request) or hand them
// to code that takes a slice; an adapter that only reads them uses All or
// At, which copy nothing.
func (r *Request) Joined() []Item {
	if len(r.History) == 0 {
		return r.Items
	}
	out := make([]Item, 0, r.Len())
	return append(append(out, r.History...), r.Items...)
}

// HistoryReader is implemented by a model, or a context window guard
// (guard.Window), that reads a request's items through Len, At or All and
// so sees Request.History. The engine fills History only when both say
// so: a model written before History existed reads Items alone, and would
// otherwise lose the thread's history without a word. Wrappers of a model
// (WithRetry) pass on what the wrapped model says.
type HistoryReader interface {
	// ReadsHistory reports whether the requests given to it may carry
	// their first items in History.
	ReadsHistory() bool
}

// ReadsHistory reports whether v (a Model, a guard.Window) reads
// Request.History: what it says, or false.
func ReadsHistory(v any) bool {
	hr, ok := v.(HistoryReader)
	return ok && hr.ReadsHistory()
}
