package window

import (
	"hash/maphash"
	"sync"

	"github.com/reinhq/rein/llm"
)

// Framing: the tokens a wire protocol adds around what is counted (role
// markers, call ids, the JSON around a tool definition). Providers differ by
// a few tokens; their usage corrects the sum.
const (
	requestOverhead = 3
	itemOverhead    = 4
	callOverhead    = 12 // the call id, the name's field, the arguments' quotes
	resultOverhead  = 10 // the call id it answers
	toolOverhead    = 8
)

// costs counts the pieces of a request. It remembers the counts of long
// texts, so a thread's history is tokenized once however many turns read
// it. It is safe for concurrent use.
type costs struct {
	c    Counter
	seed maphash.Seed

	mu       sync.Mutex
	cur, old map[uint64]int32
}

// cacheMax entries make a generation of the text cache. Every text is
// cached, short ones too: tokenizing "{}" costs more than hashing it.
const cacheMax = 1 << 16

func newCosts(c Counter) *costs {
	return &costs{c: c, seed: maphash.MakeSeed(), cur: make(map[uint64]int32)}
}

// text returns the tokens of s.
func (k *costs) text(s string) int {
	if s == "" {
		return 0
	}
	h := maphash.String(k.seed, s)
	k.mu.Lock()
	n, ok := k.cur[h]
	if !ok {
		if n, ok = k.old[h]; ok {
			k.put(h, n)
		}
	}
	k.mu.Unlock()
	if ok {
		return int(n)
	}
	// Tokenizing is the slow part: outside the lock, so turns of other
	// threads count at the same time.
	c := k.c.Count(s)
	k.mu.Lock()
	k.put(h, int32(c))
	k.mu.Unlock()
	return c
}

// put stores a count; k.mu is held. Two generations bound the memory: when
// the current one is full it becomes the old one and the oldest is dropped.
func (k *costs) put(h uint64, n int32) {
	if len(k.cur) >= cacheMax {
		k.old, k.cur = k.cur, make(map[uint64]int32, cacheMax/4)
	}
	k.cur[h] = n
}

// item returns the tokens an item takes on the wire: its text and reasoning
// text, each call's name and arguments, each result's content.
func (k *costs) item(it *llm.Item) int {
	n := itemOverhead
	for i := range it.Parts {
		p := &it.Parts[i]
		switch p.Kind {
		case llm.PartText, llm.PartReasoning:
			n += k.text(p.Text)
		case llm.PartCall:
			if p.Call != nil {
				n += callOverhead + k.text(p.Call.Name) + k.text(p.Call.Args)
			}
		case llm.PartResult:
			if p.Result != nil {
				n += resultOverhead + k.text(p.Result.Content)
			}
		}
	}
	return n
}

// tools returns the tokens of the tool definitions sent.
func (k *costs) tools(specs []llm.ToolSpec) int {
	n := 0
	for i := range specs {
		s := &specs[i]
		n += toolOverhead + k.text(s.Name) + k.text(s.Description) + k.text(string(s.Schema))
	}
	return n
}
