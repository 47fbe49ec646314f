package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Nodes are alive while their row in the nodes table is: each renews it
// with its leases' heartbeat (alive for a lease from each renewal) and
// removes it when it closes or leaves (Leave). A thread's queued turns
// are left to the node that ended the thread's last turn while that node
// is alive; once it is not, any node takes them (acquire).

// alive marks this node alive for a lease from now, unless it left.
func (s *Store) alive(ctx context.Context) error {
	if s.left.Load() {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
INSERT INTO nodes (node, alive_until) VALUES ($1, now() + $2 * interval '1 millisecond')
ON CONFLICT (node) DO UPDATE SET alive_until = excluded.alive_until`, s.node, s.lease.Milliseconds())
	if err != nil {
		return fmt.Errorf("pgstore: mark node %s alive: %w", s.node, err)
	}
	return nil
}

// forgetDead removes the rows of nodes gone for a day: node names are per
// process, so rows of processes long gone would otherwise pile up.
func (s *Store) forgetDead(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM nodes WHERE alive_until < now() - interval '1 day'`); err != nil {
		return fmt.Errorf("pgstore: forget dead nodes: %w", err)
	}
	return nil
}

// Leave says this node starts no more turns (it drains, or closes): the
// queued turns of the threads whose last turn it ended are taken by the
// other nodes at once rather than a lease after their last write, and
// their takers are woken. The node's running turns keep their leases; it
// is not marked alive again.
func (s *Store) Leave(ctx context.Context) error {
	s.left.Store(true)
	return s.inTx(ctx, func(txn pgx.Tx) error {
		if _, err := txn.Exec(ctx, `DELETE FROM nodes WHERE node = $1`, s.node); err != nil {
			return fmt.Errorf("pgstore: node %s leaves: %w", s.node, err)
		}
		if _, err := txn.Exec(ctx, `SELECT pg_notify($1, $2)`, wakeChannel, s.node); err != nil {
			return fmt.Errorf("pgstore: node %s leaves: %w", s.node, err)
		}
		return nil
	})
}

// leaveTimeout bounds the Leave that Close makes: a database that does
// not answer lets the node's row expire by itself within a lease.
const leaveTimeout = 2 * time.Second
