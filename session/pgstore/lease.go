package pgstore

import (
	"context"
	"time"
)

// heartbeat renews this node's leases every lease/3 until Close. A lease
// whose token changed (another node took the turn after it expired) is not
// renewed and is forgotten: the turn's writes from here are refused by the
// database anyway, this only stops renewing what is gone.
func (s *Store) heartbeat() {
	defer close(s.done)
	tick := time.NewTicker(s.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.renew()
		}
	}
}

// renew renews every lease this node holds, in one statement, and marks
// the node alive for a lease more.
func (s *Store) renew() {
	actx, acancel := context.WithTimeout(context.Background(), s.lease)
	// A failure leaves the node alive until its row runs out, as its
	// leases do; the next tick tries again.
	_ = s.alive(actx)
	acancel()
	s.mu.Lock()
	if len(s.held) == 0 {
		s.mu.Unlock()
		return
	}
	ids := make([]string, 0, len(s.held))
	fences := make([]int64, 0, len(s.held))
	for id, f := range s.held {
		ids = append(ids, id)
		fences = append(fences, f)
	}
	s.mu.Unlock()
	// Bounded by the lease: a renewal later than that is worthless.
	ctx, cancel := context.WithTimeout(context.Background(), s.lease)
	defer cancel()
	rows, err := s.pool.Query(ctx, `
UPDATE turns SET lease_until = now() + $3 * interval '1 millisecond'
FROM unnest($1::text[], $2::bigint[]) AS h(id, fence)
WHERE turns.id = h.id AND turns.fence = h.fence AND turns.status = 'running'
RETURNING turns.id`, ids, fences, s.lease.Milliseconds())
	if err != nil {
		// The database did not answer: the leases run on until they
		// expire; the next tick tries again.
		return
	}
	renewed := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			renewed[id] = true
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	for i, id := range ids {
		if !renewed[id] {
			s.release(id, fences[i])
		}
	}
}
