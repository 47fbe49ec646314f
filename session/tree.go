package session

import (
	"context"
	"errors"
	"fmt"
)

// ErrSubagentThread is wrapped by the error for starting, steering,
// interrupting or answering a turn of a sub-agent's thread: its turn is its parent's task call's,
// and only the parent thread's turns start and answer it.
var ErrSubagentThread = errors.New("session: the thread is a sub-agent's; its parent thread's turns run it")

// checkNotChild refuses a sub-agent's thread; th.mu is held.
func checkNotChild(th *thread) error {
	if l := th.info.Parent; !l.IsZero() {
		return fmt.Errorf("%w (thread %s was run by call %s of thread %s; continue or answer that thread)", ErrSubagentThread, th.info.ID, l.CallID, l.ThreadID)
	}
	return nil
}

// notChild refuses a sub-agent's thread, taking th.mu: steering or
// interrupting its turn would change, behind the parent's task call, a run
// that only the parent's turn controls (an interrupted child's thread said
// interrupted while the parent still waited on its pause).
func notChild(th *thread) error {
	th.mu.Lock()
	defer th.mu.Unlock()
	return checkNotChild(th)
}

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
