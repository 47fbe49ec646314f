package llm

import (
	"errors"
	"fmt"
)

// CheckHistory verifies the history invariants of DESIGN §2.5, which must
// hold before every model request:
//
//   - every call has exactly one result, placed after the assistant item that
//     holds the call and before the next assistant item;
//   - no result without its call;
//   - call ids are non-empty and unique within the history.
//
// It returns nil or an error listing every violation. Tests run it on every
// request a model receives.
func CheckHistory(items []Item) error { return checkItems(nil, items) }

// CheckRequest is CheckHistory of everything req sends: its History, then
// its Items.
func CheckRequest(req *Request) error { return checkItems(req.History, req.Items) }

// checkItems is CheckHistory of history's items, then items'. It indexes
// the two slices rather than ranging over an iterator: a check that runs
// on every request of a scripted test allocated its loop's closures.
func checkItems(history, items []Item) error {
	n := len(history) + len(items)
	var errs []error
	seen := make(map[string]int)  // call id -> item index of its call
	open := make(map[string]bool) // calls of the latest assistant item still unanswered
	var openOrder []string
	closeOpen := func(at int) {
		for _, id := range openOrder {
			if open[id] {
				errs = append(errs, fmt.Errorf("item %d: call %q (item %d) has no result before the next assistant item", at, id, seen[id]))
			}
		}
		clear(open)
		openOrder = openOrder[:0]
	}
	for i := range n {
		var it *Item
		if i < len(history) {
			it = &history[i]
		} else {
			it = &items[i-len(history)]
		}
		switch it.Role {
		case RoleAssistant:
			closeOpen(i)
			for _, p := range it.Parts {
				if p.Kind == PartResult {
					errs = append(errs, fmt.Errorf("item %d: assistant item holds a result part", i))
				}
				if p.Kind != PartCall {
					continue
				}
				if p.Call == nil {
					errs = append(errs, fmt.Errorf("item %d: call part without a call", i))
					continue
				}
				id := p.Call.ID
				if id == "" {
					errs = append(errs, fmt.Errorf("item %d: call to %q has an empty id", i, p.Call.Name))
					continue
				}
				if prev, dup := seen[id]; dup {
					errs = append(errs, fmt.Errorf("item %d: call id %q already used by item %d", i, id, prev))
					continue
				}
				seen[id] = i
				open[id] = true
				openOrder = append(openOrder, id)
			}
		case RoleTool:
			n := 0
			for _, p := range it.Parts {
				if p.Kind == PartCall {
					errs = append(errs, fmt.Errorf("item %d: tool item holds a call part", i))
				}
				if p.Kind != PartResult {
					continue
				}
				n++
				if p.Result == nil {
					errs = append(errs, fmt.Errorf("item %d: result part without a result", i))
					continue
				}
				id := p.Result.CallID
				switch {
				case open[id]:
					open[id] = false
				case isKnown(seen, id):
					errs = append(errs, fmt.Errorf("item %d: second or misplaced result for call %q", i, id))
				default:
					errs = append(errs, fmt.Errorf("item %d: result for unknown call %q", i, id))
				}
			}
			if n != 1 {
				errs = append(errs, fmt.Errorf("item %d: tool item holds %d results, want 1", i, n))
			}
		case RoleUser:
			for _, p := range it.Parts {
				if p.Kind == PartCall || p.Kind == PartResult {
					errs = append(errs, fmt.Errorf("item %d: user item holds a %s part", i, p.Kind))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("item %d: unknown role %q", i, it.Role))
		}
	}
	closeOpen(n)
	return errors.Join(errs...)
}

func isKnown(seen map[string]int, id string) bool {
	_, ok := seen[id]
	return ok
}
