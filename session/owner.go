package session

import "context"

// ThreadOwner returns the owner of thread id (record.Thread.Owner) without
// holding the thread: from memory when the scheduler holds it, else read
// from the store. Asking whether a caller may use a thread must not load
// it — loading starts the turns queued on it before a restart, and keeps
// it in memory — for a caller that turns out not to own it.
func (s *Scheduler) ThreadOwner(ctx context.Context, id string) (string, error) {
	s.mu.Lock()
	th, ok := s.threads[id]
	s.mu.Unlock()
	if ok {
		th.mu.Lock()
		defer th.mu.Unlock()
		return th.info.Owner, nil
	}
	snap, err := s.c.Store.LoadThread(ctx, id)
	if err != nil {
		return "", err
	}
	return snap.Thread.Owner, nil
}
