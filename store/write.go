package store

import (
	"context"
	"database/sql"
	"fmt"
)

// op is one write: fn runs inside the batch's transaction, in its own
// savepoint.
type op struct {
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan error
}

// maxBatch bounds how many writes share a commit, so one commit's latency
// stays small when many turns write at once.
const maxBatch = 256

func (s *Store) start() {
	s.ops = make(chan *op, maxBatch)
	s.done = make(chan struct{})
	go s.writer()
}

// write runs fn in a write transaction and returns once it has committed
// or failed. ctx bounds only the wait for a place in the queue: a queued
// write is carried out and its result reported whatever happens to ctx, so
// an error always means the write did not happen.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.path, ErrReadOnly)
	}
	o := &op{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.ops <- o:
	case <-ctx.Done():
		s.mu.RUnlock()
		return fmt.Errorf("store: write not queued: %w", ctx.Err())
	}
	s.mu.RUnlock()
	return <-o.done
}

// writer commits the waiting writes, a batch per transaction, until ops is
// closed.
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*op, 0, maxBatch)
	for first := range s.ops {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-s.ops:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch in one transaction. Each write gets a savepoint, so a
// failing write is rolled back alone and the others still commit.
func (s *Store) commit(batch []*op) {
	// The writes' own contexts are not used: a write that has started is
	// finished, so its caller learns the truth.
	ctx := context.Background()
	errs := make([]error, len(batch))
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		for _, o := range batch {
			o.done <- fmt.Errorf("store: begin: %w", err)
		}
		return
	}
	if len(batch) == 1 {
		errs[0] = batch[0].fn(ctx, tx)
	} else {
		for i, o := range batch {
			errs[i] = s.inSavepoint(ctx, tx, o.fn)
		}
	}
	if len(batch) == 1 && errs[0] != nil {
		tx.Rollback()
		batch[0].done <- errs[0]
		return
	}
	cerr := tx.Commit()
	for i, o := range batch {
		switch {
		case errs[i] != nil:
			o.done <- errs[i]
		case cerr != nil:
			o.done <- fmt.Errorf("store: commit: %w", cerr)
		default:
			o.done <- nil
		}
	}
}

func (s *Store) inSavepoint(ctx context.Context, tx *sql.Tx, fn func(context.Context, *sql.Tx) error) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT w`); err != nil {
		return fmt.Errorf("store: savepoint: %w", err)
	}
	err := fn(ctx, tx)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO w`); rerr != nil {
			return fmt.Errorf("%w (and rolling it back: %v)", err, rerr)
		}
	}
	if _, rerr := tx.ExecContext(ctx, `RELEASE w`); rerr != nil && err == nil {
		return fmt.Errorf("store: release savepoint: %w", rerr)
	}
	return err
}
