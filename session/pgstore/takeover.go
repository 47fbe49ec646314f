package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// wakeChannel is the PostgreSQL notification channel a node's Handover
// wakes the other nodes' takers on, so that a handed-over turn goes on at
// once rather than at their next poll.
const wakeChannel = "rein_turns"

// DefaultPoll is how often a node looks for turns to take (TakeTurns):
// the lost node's lease plus this bounds how long its turn waits.
const DefaultPoll = 250 * time.Millisecond

// Handover ends this node's lease on a running turn at once, so another
// node's Acquire takes the turn and goes on with it from its committed
// items; the other nodes' takers are woken. From here this node's writes
// of the turn are refused, as a lost node's would be. A turn this node no
// longer holds is an error matching ErrLeaseLost. It implements
// session.Handoff.
func (s *Store) Handover(ctx context.Context, turnID string) error {
	held := s.fence(turnID)
	if held == 0 {
		return &LeaseLostError{TurnID: turnID}
	}
	// Forgotten first: whatever the database says, this node writes the
	// turn no more.
	s.release(turnID, held)
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE turns SET lease_until = now() - interval '1 millisecond' WHERE id = $1 AND fence = $2 AND status = 'running'`, turnID, held)
		if err != nil {
			return fmt.Errorf("pgstore: hand over turn %s: %w", turnID, err)
		}
		n = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, wakeChannel, turnID); err != nil {
			return fmt.Errorf("pgstore: hand over turn %s: %w", turnID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return &LeaseLostError{TurnID: turnID, Held: held}
	}
	return nil
}

// TakeTurns runs the turns this node takes until ctx ends: every poll (and
// at once when another node hands a turn over) it calls Acquire for as
// many turns as the node has room for, and hands each to run. A queued
// turn of a thread with no running turn is the queue of the node that
// ended the thread's last turn, which starts it as that turn ends: it is
// taken at once when that node is gone (it died, closed or drains: Leave),
// and otherwise only once the thread was not written for a lease's term.
// A turn run
// refuses (it returns an error) is handed over again for another node.
// Acquire's errors (the database is unreachable) are passed to failed,
// when not nil, and the next poll tries again. poll 0 is DefaultPoll.
func (s *Store) TakeTurns(ctx context.Context, poll time.Duration, readOnly ReadOnly, run func(context.Context, Taken) error, failed func(error)) {
	if poll <= 0 {
		poll = DefaultPoll
	}
	wake := make(chan struct{}, 1)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		s.listen(ctx, wake)
	}()
	defer func() { <-listening }()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		taken, err := s.acquire(ctx, s.max, readOnly, s.lease)
		if err != nil && ctx.Err() == nil && failed != nil {
			failed(err)
		}
		for _, t := range taken {
			if err := run(ctx, t); err != nil {
				hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.lease)
				herr := s.Handover(hctx, t.Turn.ID)
				cancel()
				if herr != nil && failed != nil {
					failed(fmt.Errorf("pgstore: turn %s was taken but not run (%v) and could not be handed back: %w", t.Turn.ID, err, herr))
				}
			}
		}
		timer.Reset(s.untilNext(ctx, poll))
	}
}

// untilNext is how long the taker sleeps: the poll, or less when another
// node's lease ends sooner (so a lost node's turn is taken as its lease
// ends, not up to a poll later).
func (s *Store) untilNext(ctx context.Context, poll time.Duration) time.Duration {
	var ms *float64
	err := s.pool.QueryRow(ctx, `SELECT EXTRACT(EPOCH FROM min(lease_until) - now()) * 1000 FROM turns
WHERE status = 'running' AND node <> $1 AND lease_until > now()`, s.node).Scan(&ms)
	if err != nil || ms == nil {
		return poll
	}
	// A little after the end: the lease must have ended when Acquire
	// looks.
	if d := time.Duration(*ms*float64(time.Millisecond)) + 5*time.Millisecond; d < poll {
		return d
	}
	return poll
}

// listen signals wake on each hand-over notification until ctx ends; it
// gives up (the poll remains) when it cannot hold a connection, and tries
// again a poll later.
func (s *Store) listen(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, wake)
		if err == nil || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, wake chan<- struct{}) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// A connection that was listening is not handed back to others.
		conn.Conn().Close(context.Background())
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+wakeChannel); err != nil {
		return err
	}
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			return err
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}
