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

// Items are committed in batches (group commit): each committer takes
// every item waiting when it is free and writes them in one statement, its
// own transaction, so a commit's round trip and flush are paid per batch,
// not per item; the committers' commits meet in the database's flushes.
// Each item is still committed, and fenced, before its Record returns; an
// item refused is refused alone.
const (
	// maxBatch bounds the items of one statement, so a commit's latency
	// stays small when many turns write at once.
	maxBatch = 256
	// committers is how many batches are written at once: a statement
	// waits for a core as much as for the disk, and while one batch is
	// flushed the next is written.
	committers = 4
)

// ErrClosed is matched by the error for a write after Close.
var ErrClosed = errors.New("pgstore: the store is closed")

// The states of a recordOp: queued until the committer takes it into a
// statement, or abandoned by its writer first (its context ended).
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
// is not written; once the item is in a statement, record waits for the
// statement's outcome, so its error always means the item was not
// written.
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

// committer commits batches of queued items until ops is closed and
// drained.
func (s *Store) committer() {
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
// taken: from here their writers wait for the statement's outcome.
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

// batchSQL appends a batch of items in one statement, so in one round
// trip and one commit: the threads' rows locked in id order (no two batches
// wait on each other), the turns' leases share-locked (a takeover, which
// changes the token, waits for the commit) and read as they are now, the
// items that pass their fence inserted after their thread's last item, the
// threads' counts and titles and the steers delivered. It returns a row per
// item: whether it was written and, when it was not, what refused it.
const batchSQL = `
WITH v AS MATERIALIZED (
	SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::text[], $9::bigint[], $10::text[])
		AS v(ord, thread, id, turn, role, origin, pending, parts, fence, title)
), th AS MATERIALIZED (
	SELECT id, nitems FROM threads WHERE id IN (SELECT thread FROM v) ORDER BY id FOR UPDATE
), tu AS MATERIALIZED (
	SELECT id, status, fence, node FROM turns WHERE id IN (SELECT turn FROM v WHERE turn <> '') FOR SHARE
), ok AS MATERIALIZED (
	SELECT v.*, th.nitems + row_number() OVER (PARTITION BY v.thread ORDER BY v.ord) AS seq
	FROM v JOIN th ON th.id = v.thread LEFT JOIN tu ON tu.id = v.turn
	WHERE v.turn = ''
		OR (tu.id IS NULL AND v.fence = 0)
		OR (v.fence <> 0 AND tu.status = 'running' AND tu.fence = v.fence)
		OR (v.fence = 0 AND tu.status <> 'running')
), ins AS (
	INSERT INTO items (thread, seq, id, turn, role, origin, pending, parts, created)
	SELECT thread, seq, id, turn, role, origin, pending, parts, $11 FROM ok
), upd AS (
	UPDATE threads SET nitems = n.last, title = CASE WHEN threads.title = '' THEN n.title ELSE threads.title END
	FROM (SELECT thread, max(seq) AS last, coalesce((array_agg(title ORDER BY ord) FILTER (WHERE title <> ''))[1], '') AS title
		FROM ok GROUP BY thread) AS n
	WHERE threads.id = n.thread
), st AS (
	UPDATE steers SET delivered = $11 WHERE id IN (SELECT id FROM ok WHERE origin = 'steer') AND delivered IS NULL
)
SELECT v.ord, EXISTS (SELECT 1 FROM ok WHERE ok.ord = v.ord), th.id IS NOT NULL, tu.id IS NOT NULL,
	coalesce(tu.status, ''), coalesce(tu.fence, 0), coalesce(tu.node, '')
FROM v LEFT JOIN th ON th.id = v.thread LEFT JOIN tu ON tu.id = v.turn`

// writeBatch appends the batch's items in one statement (batchSQL), its
// own transaction, committed when the database answers. An item refused
// (its lease lost, its thread missing) gets its error in errs and the
// others are written; an item the batch cannot write (an id recorded
// before: a placeholder's answer) returns errFallback, with nothing
// written.
func (s *Store) writeBatch(ctx context.Context, batch []*recordOp, errs []error) error {
	n := len(batch)
	var (
		ord                                          = make([]int32, n)
		thread, id, turn, role, origin, parts, title = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		pending                                      = make([]bool, n)
		fence                                        = make([]int64, n)
	)
	for i, op := range batch {
		it := &op.it
		res := it.Result()
		ord[i], thread[i], id[i], turn[i] = int32(i), op.threadID, it.ID, it.TurnID
		role[i], origin[i], parts[i], fence[i] = it.Role.String(), it.Origin.String(), string(op.parts), op.fence
		pending[i] = it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending
		if it.Role == llm.RoleUser && it.Origin == llm.OriginInput {
			// The first thing the user said names the thread in lists.
			title[i] = shortTitle(it.Text())
		}
	}
	rows, err := s.pool.Query(ctx, batchSQL, ord, thread, id, turn, role, origin, pending, parts, fence, title, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("pgstore: items: %w", err)
	}
	type outcome struct {
		written, thread, found bool
		status, node           string
		fence                  int64
	}
	got := make([]outcome, n)
	seen := 0
	for rows.Next() {
		var i int32
		var o outcome
		if err := rows.Scan(&i, &o.written, &o.thread, &o.found, &o.status, &o.fence, &o.node); err != nil {
			rows.Close()
			return fmt.Errorf("pgstore: items: %w", err)
		}
		if i < 0 || int(i) >= n {
			rows.Close()
			return fmt.Errorf("pgstore: items: the database answered for item %d of %d", i, n)
		}
		got[i] = o
		seen++
	}
	// Close waits for the end of the statement's transaction: its commit.
	rows.Close()
	if err := rows.Err(); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return errFallback
		}
		return fmt.Errorf("pgstore: items: %w", err)
	}
	if seen != n {
		return fmt.Errorf("pgstore: items: the database answered for %d of %d items", seen, n)
	}
	for i, op := range batch {
		o := got[i]
		switch {
		case o.written:
		case !o.thread:
			errs[i] = notFound(op.threadID)
		default:
			errs[i] = fenceErr(op.it.TurnID, op.fence, o.found, o.status, o.fence, o.node)
			if errs[i] == nil {
				// The statement's rule and fenceErr disagree: never
				// report an item written that was not.
				errs[i] = fmt.Errorf("pgstore: item %s was not written", op.it.ID)
			}
		}
	}
	return nil
}
