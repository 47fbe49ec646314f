package rein

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/reinhq/rein/session"
)

// How an agent lets go of its threads: the scheduler holds a thread's
// history in memory, and so does the memory store, so a program that makes
// a thread per request would grow without end. Once no Thread of a thread
// is reachable (or Agent.Run is done with its own) the agent forgets it.

// handle is a Thread's claim on its thread; released once, by Agent.Run
// or when the Thread is collected.
type handle struct {
	a    *Agent
	id   string
	done atomic.Bool
}

// hold gives t a handle, released when t is collected.
func (a *Agent) hold(t *Thread) {
	h := &handle{a: a, id: t.id}
	a.mu.Lock()
	if a.handles == nil {
		a.handles = make(map[string]int)
	}
	a.handles[t.id]++
	a.mu.Unlock()
	t.h = h
	runtime.AddCleanup(t, (*handle).release, h)
}

// release gives the handle up; the last of a thread's makes the agent
// forget it.
func (h *handle) release() {
	if h == nil || !h.done.CompareAndSwap(false, true) {
		return
	}
	a := h.a
	a.mu.Lock()
	a.handles[h.id]--
	last := a.handles[h.id] <= 0
	if last {
		delete(a.handles, h.id)
	}
	a.mu.Unlock()
	if last {
		a.forget(h.id)
	}
}

// forget drops the thread from the scheduler's memory and, without a DB,
// from the memory store and its trace: nothing could reach it any more, so
// a turn of it still paused is interrupted first.
func (a *Agent) forget(id string) {
	ctx := context.Background()
	if a.mem != nil {
		if cur, ok, err := a.sched.Active(ctx, id); err == nil && ok && cur.Status == session.TurnPaused {
			_ = a.sched.Interrupt(ctx, id, cur.ID)
		}
	}
	// The scheduler tells the runtime (session.Config.Forgotten).
	if !a.sched.Forget(id) {
		return
	}
	if a.mem == nil {
		return
	}
	_ = a.mem.DeleteThread(ctx, id)
	a.mem.forget(id)
}
