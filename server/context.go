package server

import (
	"sync"

	"github.com/reinhq/rein/event"
)

// maxContexts bounds the threads whose latest context report the server
// remembers; past it the oldest remembered is forgotten.
const maxContexts = 4096

// contexts remembers, per thread, the context budget of the latest model
// request the server's connections saw (context/updated), so thread/read
// can return it: a page reloaded after a turn shows its context meter
// without waiting for the next request. It lives in memory: after a
// restart a thread has none until its next request.
type contexts struct {
	mu    sync.Mutex
	m     map[string]*event.ContextReport
	order []string // thread ids, oldest first
}

func (c *contexts) put(thread string, r *event.ContextReport) {
	if r == nil || thread == "" {
		return
	}
	cp := *r
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*event.ContextReport)
	}
	if _, ok := c.m[thread]; !ok {
		if len(c.order) >= maxContexts {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, thread)
	}
	c.m[thread] = &cp
}

func (c *contexts) get(thread string) *event.ContextReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.m[thread]; ok {
		cp := *r
		return &cp
	}
	return nil
}
