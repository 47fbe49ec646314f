package session

import (
	"sync"

	"github.com/reinhq/rein/llm"
)

// inbox holds steered input until the turn reads it (loop.Inbox). Items
// are put only after the store has accepted them, so what a turn reads is
// always durable.
type inbox struct {
	mu    sync.Mutex
	items []llm.Item
}

func (b *inbox) put(it llm.Item) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, it)
}

// Drain implements loop.Inbox.
func (b *inbox) Drain() []llm.Item {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.items
	b.items = nil
	return out
}
