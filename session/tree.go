package session

import "context"

// ListAllThreads lists the store's threads, sub-agents' threads included
// (ListThreads leaves them out); a store that does not keep sub-agents'
// threads (no ThreadTree) lists what ListThreads does.
func (s *Scheduler) ListAllThreads(ctx context.Context, limit int, cursor string) ([]Thread, string, error) {
	if tr, ok := s.c.Store.(ThreadTree); ok {
		return tr.ListAllThreads(ctx, limit, cursor)
	}
	return s.c.Store.ListThreads(ctx, limit, cursor)
}

// ListChildren returns the threads of the sub-agents that turns of thread
// id ran, oldest first: none when the store does not keep them.
func (s *Scheduler) ListChildren(ctx context.Context, id string) ([]Thread, error) {
	if tr, ok := s.c.Store.(ThreadTree); ok {
		return tr.ListChildren(ctx, id)
	}
	return nil, nil
}
