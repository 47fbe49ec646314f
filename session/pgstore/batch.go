package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/llm"
)

// Items are committed in batches (group commit): each writer takes
// every item waiting when it is free and writes them in one transaction
// (writeBatch), so a commit's round trips and flush are paid per batch, not
// per item; the writers' commits meet in the database's flushes.
// Each item is still committed, and fenced, before its Record returns; an
// item refused is refused alone.
const (
	// maxBatch bounds the items of one transaction, so a commit's latency
	// stays small when many turns write at once.
	maxBatch = 256
	// writers is how many batches are written at once: a batch waits
	// for a core as much as for the disk, and while one batch is flushed
	// the next is written.
	writers = 4
)

// ErrClosed is matched by the error for a write after Close.
var ErrClosed = errors.New("pgstore: the store is closed")

// The states of a recordOp: queued until a writer takes it into a
// batch, or abandoned by its writer first (its context ended).
const (
	opQueued int32 = iota
	opTaken
	opAbandoned
)

// recordOp is one Record waiting for its batch.
type recordOp struct {
	threadID string
	it       llm.Item
	parts    []byte
	// fence is the lease the writer held when it asked.
	fence int64
	state atomic.Int32
	done  chan error
}

// errFallback says a batch holds an item the batch path does not write (a
// placeholder's answer, an item recorded again): its items are written
// one by one instead.
var errFallback = errors.New("pgstore: batch needs the one-by-one path")

// record queues op for a batch and waits for its commit. A writer whose
// ctx ends while its item waits in the queue gets ctx's error and the item
// is not written; once the item is in a batch, record waits for the
// batch's outcome, so its error always means the item was not written.
func (s *Store) record(ctx context.Context, op *recordOp) error {
	s.closing.RLock()
	if s.closed {
		s.closing.RUnlock()
		return ErrClosed
	}
	select {
	case s.ops <- op:
	case <-ctx.Done():
		s.closing.RUnlock()
		return fmt.Errorf("pgstore: item %s not queued: %w", op.it.ID, ctx.Err())
	}
	s.closing.RUnlock()
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		if op.state.CompareAndSwap(opQueued, opAbandoned) {
			return fmt.Errorf("pgstore: item %s not written: %w", op.it.ID, ctx.Err())
		}
		return <-op.done
	}
}

// writer commits batches of queued items until ops is closed and
// drained.
func (s *Store) writer() {
	defer s.writersDone.Done()
	batch := make([]*recordOp, 0, maxBatch)
	for first := range s.ops {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case op, ok := <-s.ops:
				if !ok {
					break fill
				}
				batch = append(batch, op)
			default:
				break fill
			}
		}
		if batch = take(batch); len(batch) > 0 {
			s.commitBatch(batch)
		}
		clear(batch)
	}
}

// take keeps the batch's items whose writers still wait, and marks them
// taken: from here their writers wait for the batch's outcome.
func take(batch []*recordOp) []*recordOp {
	return slices.DeleteFunc(batch, func(op *recordOp) bool { return !op.state.CompareAndSwap(opQueued, opTaken) })
}

// commitBatch writes a batch in one transaction, or one by one when it
// must.
func (s *Store) commitBatch(batch []*recordOp) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	err := s.writeBatch(ctx, batch, errs)
	if errors.Is(err, errFallback) || (err != nil && len(batch) > 1) {
		for _, op := range batch {
			op.done <- s.inTx(ctx, func(tx pgx.Tx) error { return s.recordOne(ctx, tx, op) })
		}
		return
	}
	for i, op := range batch {
		switch {
		case errs[i] != nil:
			op.done <- errs[i]
		case err != nil:
			op.done <- err
		default:
			op.done <- nil
		}
	}
}

// recordOne is Record of one item inside tx.
func (s *Store) recordOne(ctx context.Context, tx pgx.Tx, op *recordOp) error {
	n, err := lockThread(ctx, tx, op.threadID)
	if err != nil {
		return err
	}
	if err := checkFence(ctx, tx, op.it.TurnID, op.fence); err != nil {
		return err
	}
	_, err = putItem(ctx, tx, op.threadID, n, op.it, op.parts)
	return err
}

// writeBatch appends the batch's items in one transaction of two round
// trips: the transaction begun, the threads' rows locked in id order (no
// two batches wait on each other) and the turns' leases read in the first;
// the items inserted in one statement, the threads' counts and the steers
// delivered, and the commit in the second. An item refused (its lease
// lost, its thread missing) gets its error in errs and the others go on;
// an item the batch cannot write (an id recorded before) returns
// errFallback, with nothing written.
func (s *Store) writeBatch(ctx context.Context, batch []*recordOp, errs []error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: items: %w", err)
	}
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			// A failed pipeline leaves its transaction open (or
			// aborted): end it before the connection goes back.
			if _, rerr := conn.Exec(context.Background(), `ROLLBACK`); rerr != nil {
				conn.Conn().Close(context.Background())
			}
		}
	}()
	var threadIDs, turnIDs []string
	for _, op := range batch {
		threadIDs = append(threadIDs, op.threadID)
		if op.it.TurnID != "" {
			turnIDs = append(turnIDs, op.it.TurnID)
		}
	}
	slices.Sort(threadIDs)
	threadIDs = slices.Compact(threadIDs)
	// The threads locked and the leases read in one round trip.
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT id, nitems FROM threads WHERE id = ANY($1) ORDER BY id FOR UPDATE`, threadIDs)
	b.Queue(`SELECT id, status, fence, node FROM turns WHERE id = ANY($1) FOR SHARE`, turnIDs)
	br := conn.SendBatch(ctx, b)
	nitems := make(map[string]int64, len(threadIDs))
	type lease struct {
		status, node string
		fence        int64
	}
	leases := make(map[string]lease, len(turnIDs))
	err = func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return err
			}
			nitems[id] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if rows, err = br.Query(); err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var l lease
			if err := rows.Scan(&id, &l.status, &l.fence, &l.node); err != nil {
				rows.Close()
				return err
			}
			leases[id] = l
		}
		rows.Close()
		return rows.Err()
	}()
	if err != nil {
		return fmt.Errorf("pgstore: items: %w", err)
	}
	now := time.Now().UnixNano()
	var (
		cThread, cID, cTurn, cRole, cOrigin, cParts []string
		cSeq                                        []int64
		cPending                                    []bool
		steers                                      []string
		titles                                      = make(map[string]string)
	)
	for i, op := range batch {
		n, ok := nitems[op.threadID]
		if !ok {
			errs[i] = notFound(op.threadID)
			continue
		}
		if op.it.TurnID != "" {
			l, found := leases[op.it.TurnID]
			if err := fenceErr(op.it.TurnID, op.fence, found, l.status, l.fence, l.node); err != nil {
				errs[i] = err
				continue
			}
		}
		it := &op.it
		res := it.Result()
		n++
		nitems[op.threadID] = n
		cThread, cSeq, cID, cTurn = append(cThread, op.threadID), append(cSeq, n), append(cID, it.ID), append(cTurn, it.TurnID)
		cRole, cOrigin, cParts = append(cRole, it.Role.String()), append(cOrigin, it.Origin.String()), append(cParts, string(op.parts))
		cPending = append(cPending, it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending)
		if it.Role == llm.RoleUser && it.Origin == llm.OriginInput && titles[op.threadID] == "" {
			titles[op.threadID] = shortTitle(it.Text())
		}
		if it.Origin == llm.OriginSteer {
			steers = append(steers, it.ID)
		}
	}
	if len(cID) == 0 {
		return nil
	}
	// No ON CONFLICT: an id recorded before fails the statement, the
	// commit behind it in the pipeline is not run, and the batch goes the
	// one-by-one way.
	w := &pgx.Batch{}
	w.Queue(`
INSERT INTO items (thread, seq, id, turn, role, origin, pending, parts, created)
SELECT thread, seq, id, turn, role, origin, pending, parts, $9
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::text[])
	AS v(thread, seq, id, turn, role, origin, pending, parts)`, cThread, cSeq, cID, cTurn, cRole, cOrigin, cPending, cParts, now)
	var uID, uTitle []string
	var uN []int64
	for _, id := range threadIDs {
		if n, ok := nitems[id]; ok {
			uID, uN, uTitle = append(uID, id), append(uN, n), append(uTitle, titles[id])
		}
	}
	w.Queue(`
UPDATE threads SET nitems = v.n, title = CASE WHEN threads.title = '' THEN v.title ELSE threads.title END
FROM unnest($1::text[], $2::bigint[], $3::text[]) AS v(id, n, title) WHERE threads.id = v.id`, uID, uN, uTitle)
	if len(steers) > 0 {
		w.Queue(`UPDATE steers SET delivered = $2 WHERE id = ANY($1) AND delivered IS NULL`, steers, now)
	}
	w.Queue(`COMMIT`)
	// The items, the threads' counts, the steers delivered and the commit
	// in one round trip.
	wr := conn.SendBatch(ctx, w)
	defer wr.Close()
	for range w.Len() {
		if _, err := wr.Exec(); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return errFallback
			}
			return fmt.Errorf("pgstore: items: %w", err)
		}
	}
	if err := wr.Close(); err != nil {
		return fmt.Errorf("pgstore: items: %w", err)
	}
	committed = true
	return nil
}
