package window

import "github.com/reinhq/rein/llm"

// ledger keeps the count of every item of a turn's history, so a round
// counts only what it added: per-item counts and per-segment sums, never a
// walk over the whole history.
type ledger struct {
	k        *costs
	classify func(*llm.Item) Segment
	tokens   []int32
	segs     []Segment
	sums     [numSegments]int
}

// sync brings the ledger up to the request's items: it counts again the
// edited items and counts the new ones. A history shorter than what was
// counted was replaced; it is counted from scratch.
func (l *ledger) sync(req *llm.Request, edited []int) {
	n := req.Len()
	if n < len(l.tokens) {
		l.reset()
	}
	for _, i := range edited {
		if i >= 0 && i < len(l.tokens) {
			l.set(i, req.At(i))
		}
	}
	for i := len(l.tokens); i < n; i++ {
		l.tokens = append(l.tokens, 0)
		l.segs = append(l.segs, 0)
		l.set(i, req.At(i))
	}
}

// segment is the item's segment: History for anything the classifier puts
// outside the input segments.
func (l *ledger) segment(it *llm.Item) Segment {
	s := l.classify(it)
	if s >= inputSegments || s == Tools {
		return History
	}
	return s
}

// set counts item i again.
func (l *ledger) set(i int, it *llm.Item) {
	l.sums[l.segs[i]] -= int(l.tokens[i])
	s := l.segment(it)
	n := l.k.item(it)
	l.tokens[i], l.segs[i] = int32(n), s
	l.sums[s] += n
}

func (l *ledger) reset() {
	l.tokens, l.segs = l.tokens[:0], l.segs[:0]
	l.sums = [numSegments]int{}
}

// total returns the tokens of the counted items.
func (l *ledger) total() int {
	n := 0
	for _, v := range l.sums {
		n += v
	}
	return n
}
