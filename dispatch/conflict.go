package dispatch

import (
	"slices"

	"github.com/reinhq/rein/tool"
)

// conflicting returns the earlier calls of the round that k must wait for:
// those it conflicts with. Waiting for each of them (not only the last)
// keeps call order between every pair that conflicts, whatever order the
// others finish in. Pause calls are left out: they run after everything.
func (r *Round) conflicting(k *call) []*call {
	var deps []*call
	for _, e := range r.calls[:k.index] {
		if e.runnable && !e.pauses && conflicts(e.keys, k.keys) {
			r.mu.Lock()
			if !e.settled && e.done == nil {
				e.done = make(chan struct{})
			}
			r.mu.Unlock()
			deps = append(deps, e)
		}
	}
	return deps
}

// conflicts reports whether two calls must not overlap: one of them is
// exclusive, or they share a key that at least one of them writes.
func conflicts(a, b tool.Keys) bool {
	if a.Exclusive || b.Exclusive {
		return true
	}
	return shares(a.Writes, b.Writes) || shares(a.Writes, b.Reads) || shares(a.Reads, b.Writes)
}

func shares(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
