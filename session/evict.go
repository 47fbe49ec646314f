package session

import (
	"context"
	"slices"
	"time"
)

// evictFloor is how long a thread must have gone unused before the count
// bound of EvictIdle may forget it, however many threads are held: a caller
// that has just looked a thread up (and is, say, reading the store before
// it starts a turn there) is never left holding a thread the scheduler
// dropped.
const evictFloor = 10 * time.Second

// EvictIdle forgets (as Forget) the threads with nothing going on — no
// running, paused or queued turn, no subscriber — that no call has named
// for idle, and then, while more than keep threads are held, the least
// recently used of the others unused for evictFloor. A thread with
// something going on counts as used now. It returns how many it forgot.
// The store keeps every thread; a later call naming one loads it again.
// keep 0 leaves the count unbounded; idle 0 forgets only for the count.
func (s *Scheduler) EvictIdle(idle time.Duration, keep int) int {
	now := s.c.Now()
	type held struct {
		id   string
		th   *thread
		used time.Time
	}
	s.mu.Lock()
	all := make([]held, 0, len(s.threads))
	for id, th := range s.threads {
		all = append(all, held{id, th, th.used})
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b held) int { return a.used.Compare(b.used) })
	n, left := 0, len(all)
	for _, h := range all {
		age := now.Sub(h.used)
		switch {
		case idle > 0 && age >= idle:
		case keep > 0 && left > keep && age >= evictFloor:
		default:
			continue
		}
		if s.forgetUnused(h.id, h.th, h.used) {
			s.forgotten(h.id)
			n++
			left--
		}
	}
	return n
}

// forgetUnused forgets thread th, known as id, when it is idle and no call
// named it since used; a thread with something going on is marked used now.
func (s *Scheduler) forgetUnused(id string, th *thread, used time.Time) bool {
	th.mu.Lock()
	defer th.mu.Unlock()
	busy := th.active != nil || len(th.queue) > 0 || th.running || th.watching > 0 || th.hub.subscribed()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.threads[id] != th || !th.used.Equal(used) {
		return false
	}
	if busy {
		th.used = s.c.Now()
		return false
	}
	delete(s.threads, id)
	return true
}

// Held returns how many threads the scheduler holds in memory.
func (s *Scheduler) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.threads)
}

// SweepIdle calls EvictIdle(idle, keep) every interval until ctx ends; it
// returns then. Its caller owns it (runs it in a goroutine it waits for).
func (s *Scheduler) SweepIdle(ctx context.Context, every, idle time.Duration, keep int) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.EvictIdle(idle, keep)
		}
	}
}
