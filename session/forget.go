package session

import "context"

// Forget drops a thread from the scheduler's memory — its history, turns
// and carry — when nothing of it is going on: no active, paused or queued
// turn, no subscriber. The store keeps the thread; a later call naming it
// loads it again. It reports whether the thread is no longer held. A
// program that makes many short-lived threads (the library facade) calls
// it when it is done with one, so the scheduler's memory does not grow
// with every thread it ever ran; it must be the thread's last user.
func (s *Scheduler) Forget(threadID string) bool {
	s.mu.Lock()
	th, ok := s.threads[threadID]
	s.mu.Unlock()
	if !ok {
		return true
	}
	if !s.drop(threadID, th) {
		return false
	}
	s.forgotten(threadID)
	return true
}

// drop removes th, known as id, from memory unless something of it is
// going on; it reports whether th is no longer held.
func (s *Scheduler) drop(id string, th *thread) bool {
	// th.mu before s.mu, as launch takes them.
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.active != nil || len(th.queue) > 0 || th.running || th.watching > 0 || th.hub.subscribed() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.threads[id] == th {
		delete(s.threads, id)
	}
	return true
}

// forgotten tells Config.Forgotten of a thread dropped from memory.
func (s *Scheduler) forgotten(id string) {
	if s.c.Forgotten != nil {
		s.c.Forgotten(id)
	}
}

// subscribed reports whether the hub has a subscriber.
func (h *hub) subscribed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

// DeleteThread removes a thread, its turns and its items from the store.
// A missing thread is no error.
func (m *MemStore) DeleteThread(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, id)
	return nil
}
