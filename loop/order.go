package loop

import "github.com/reinhq/rein/llm"

// idMinter keeps call ids unique within a thread (the run's thread-wide id
// set): it returns id when it is new, and a fresh id otherwise.
type idMinter interface {
	uniqueID(id string) string
}

// callOrder hands a round's completed calls on in call order, each with an
// id unique in the thread. A provider may complete calls out of index order
// (a later call's arguments finish first) and may repeat an id, or send
// none; the dispatcher and the history see calls in order, with ids that
// name one call each. It is reused round after round (reset), so a round
// with calls allocates nothing for it.
type callOrder struct {
	// ids are the ids of the calls handed on, by call index; in buf for
	// a round of a few calls.
	ids []string
	buf [4]string
	// head is the call put next in order and not yet taken: the stream's
	// own, copied when taken (next follows put at once).
	head *llm.Call
	// pending are calls completed ahead of an earlier one, by index.
	pending map[int]llm.Call
}

// reset starts a round.
func (o *callOrder) reset() {
	if o.ids == nil {
		o.ids = o.buf[:0]
	}
	o.ids = o.ids[:0]
	o.head = nil
	clear(o.pending)
}

// put takes the call the stream completed at index i. It reports whether
// calls are now ready to take in order; a call already handed on (a repeat
// of its index) is dropped, and one ahead of an earlier call is held.
func (o *callOrder) put(i int, c *llm.Call) bool {
	switch {
	case i < len(o.ids) || (i == len(o.ids) && o.head != nil):
		return false
	case i > len(o.ids):
		if o.pending == nil {
			o.pending = make(map[int]llm.Call)
		}
		o.pending[i] = *c
		return false
	}
	o.head = c
	return true
}

// next returns the next call in order with its index and its id made
// unique by m, or false when the next call has not completed yet.
func (o *callOrder) next(m idMinter) (llm.Call, int, bool) {
	var c llm.Call
	if o.head != nil {
		c, o.head = *o.head, nil
	} else {
		var ok bool
		if c, ok = o.pending[len(o.ids)]; !ok {
			return llm.Call{}, 0, false
		}
		delete(o.pending, len(o.ids))
	}
	c.ID = m.uniqueID(c.ID)
	o.ids = append(o.ids, c.ID)
	return c, len(o.ids) - 1, true
}

// late hands on a call the final response holds at call index i that the
// stream never completed, with a unique id. It reports false for a call
// already handed on.
func (o *callOrder) late(i int, c llm.Call, m idMinter) (llm.Call, bool) {
	if i < len(o.ids) {
		return llm.Call{}, false
	}
	c.ID = m.uniqueID(c.ID)
	o.ids = append(o.ids, c.ID)
	return c, true
}

// id returns the id the call at index i was handed on with.
func (o *callOrder) id(i int) string { return o.ids[i] }

// handedOn reports whether the call at index i was handed on already.
func (o *callOrder) handedOn(i int) bool { return i < len(o.ids) }
