package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callCtx is the context a tool runs under: the round's, with the call's
// deadline. The deadline context (a context.WithDeadline) is made when the
// tool first asks its context anything, so a call whose tool never looks
// at it (a quick computation) costs no context, no timer and no
// registration with the round's context; from then on every method is
// that context's, so what a tool sees does not depend on when it asked.
// It lives in the call, so it costs no allocation of its own either.
type callCtx struct {
	parent   context.Context
	deadline time.Time

	// made is set once ctx and cancel are; they do not change after.
	made   atomic.Bool
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	// ended: the call ended; a context made from now on is made cancelled,
	// as the one made before would have been.
	ended bool
}

var _ context.Context = (*callCtx)(nil)

func (c *callCtx) init(parent context.Context, deadline time.Time) {
	c.parent, c.deadline = parent, deadline
}

// get returns the deadline context, making it at the first use.
func (c *callCtx) get() context.Context {
	if c.made.Load() {
		return c.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.made.Load() {
		c.ctx, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.ended {
			c.cancel()
		}
		c.made.Store(true)
	}
	return c.ctx
}

// end cancels the context when the call has ended (the cancel of
// context.WithDeadline).
func (c *callCtx) end() {
	c.mu.Lock()
	c.ended = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Deadline implements context.Context.
func (c *callCtx) Deadline() (time.Time, bool) { return c.get().Deadline() }

// Done implements context.Context.
func (c *callCtx) Done() <-chan struct{} { return c.get().Done() }

// Err implements context.Context.
func (c *callCtx) Err() error { return c.get().Err() }

// Value implements context.Context.
func (c *callCtx) Value(key any) any { return c.get().Value(key) }

// AfterFunc lets context.AfterFunc and the cancel contexts a tool derives
// from this one register with the deadline context, not start a goroutine
// each (the context package looks for this method).
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.get(), f)
}
