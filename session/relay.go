package session

import "github.com/reinhq/rein/event"

// Relay hands an event of a turn that runs on another node (a rein serve
// sharing this one's store, its events carried by a relay such as Redis
// pub/sub) to this scheduler's subscribers of the event's thread, so that
// a client subscribed on any node sees the turn live. The thread's state
// here is not changed: the store stays the only truth, and a subscriber
// that missed live events reads the thread from it. An event of a thread
// no one here has subscribed to (not loaded) is dropped.
func (s *Scheduler) Relay(e event.Event) {
	s.mu.Lock()
	th, ok := s.threads[e.ThreadID]
	s.mu.Unlock()
	if ok {
		th.hub.Handle(e)
	}
}
