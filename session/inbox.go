package session

import (
	"sync"

	"github.com/reinhq/rein/llm"
)

// inbox holds steered input until the turn reads it (loop.Inbox). Items
// are put only after the store has accepted them, so what a turn reads is
// always durable. On a store several nodes share, fetch reads the input
// other nodes accepted for the turn; an item arrives once, however many
// ways it comes.
type inbox struct {
	mu    sync.Mutex
	items []llm.Item
	// seen holds the ids of the items put, so that one put here and read
	// from the store too is read once.
	seen  map[string]bool
	fetch func() []llm.Item
}

// put adds an item unless it was added before, and reports whether it was
// added.
func (b *inbox) put(it llm.Item) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if it.ID != "" {
		if b.seen[it.ID] {
			return false
		}
		if b.seen == nil {
			b.seen = make(map[string]bool)
		}
		b.seen[it.ID] = true
	}
	b.items = append(b.items, it)
	return true
}

// len returns how many items wait to be read.
func (b *inbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// setFetch sets how the inbox reads what other nodes left for the turn.
func (b *inbox) setFetch(f func() []llm.Item) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fetch = f
}

// pull reads what other nodes left for the turn, and returns how many new
// items it added.
func (b *inbox) pull() int {
	b.mu.Lock()
	f := b.fetch
	b.mu.Unlock()
	if f == nil {
		return 0
	}
	n := 0
	for _, it := range f() {
		if b.put(it) {
			n++
		}
	}
	return n
}

// Drain implements loop.Inbox: what other nodes left is read first.
func (b *inbox) Drain() []llm.Item {
	b.pull()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.items
	b.items = nil
	return out
}
