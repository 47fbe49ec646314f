package window

import (
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// report builds the budget of a request: the input segments as counted
// here, scaled so they add up to input (the provider's count when known),
// then the reserve and what is free. The segments add up to Total.
func (w *Window) report(counted [numSegments]int, input, reserve int, source string) *event.ContextReport {
	segs := scale(counted, input)
	segs[Reserve] = reserve
	used := input + reserve
	free := max(w.c.Window-used, 0)
	segs[Free] = free
	r := &event.ContextReport{
		Model:           w.c.Model,
		Window:          w.c.Window,
		WindowEstimated: w.c.WindowEstimated,
		Input:           input,
		Reserve:         reserve,
		Used:            used,
		Free:            free,
		Total:           max(w.c.Window, used),
		Percent:         100 * float64(used) / float64(w.c.Window),
		Source:          source,
		Counter:         w.c.Counter.Name(),
		Estimated:       w.c.WindowEstimated || source != sourceProvider && w.Estimated(),
		Segments:        make([]event.ContextSegment, numSegments),
	}
	for s := range numSegments {
		r.Segments[s] = event.ContextSegment{Name: s.String(), Tokens: segs[s]}
	}
	return r
}

// Where a report's input count comes from.
const (
	sourceProvider = "provider"
	sourceEstimate = "estimate"
)

// scale returns the input segments of counted scaled to add up to input;
// what rounding leaves goes to the largest segment.
func scale(counted [numSegments]int, input int) [numSegments]int {
	var out [numSegments]int
	sum, largest := 0, History
	for s := range inputSegments {
		sum += counted[s]
		if counted[s] > counted[largest] {
			largest = s
		}
	}
	if sum == 0 {
		out[History] = input
		return out
	}
	left := input
	for s := range inputSegments {
		out[s] = int(int64(counted[s]) * int64(input) / int64(sum))
		left -= out[s]
	}
	out[largest] += left
	return out
}

// Report counts a request as it would be sent and returns its budget: an
// estimate, since no provider has seen it (`rein context`).
func (w *Window) Report(req *llm.Request) *event.ContextReport {
	g := w.newGuard()
	segs, est := g.count(req, nil)
	return w.report(segs, est, g.reserve(req), sourceEstimate)
}
