package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

// Taken is a turn Acquire took for this node: a queued turn to start, or a
// running turn whose node was lost, to go on with.
type Taken struct {
	// Turn is the turn, running now under this node's lease.
	Turn session.Turn
	// Lost says the turn was running on a node that was lost: it goes on
	// from Items, the thread's committed history (committed rounds are not
	// run again), once the Rerun calls have their results.
	Lost bool
	// Items is the thread's history as committed (set when Lost).
	Items []llm.Item
	// Rerun are the calls that were in flight on the lost node and are
	// read-only: the new runner runs them again and records their results
	// before the next model request. The other calls in flight were
	// answered "aborted: node lost" (they may have partly run; the model
	// decides).
	Rerun []llm.Call
	// Steers is the input steered into the turn and not yet read, in the
	// order it was accepted.
	Steers []llm.Item
	// Resume is set for a paused turn the lost node had claimed with an
	// answer (ClaimAnswer) and not yet recorded it: the turn resumes from
	// its paused state with that answer (Lost is false).
	Resume *session.Resumption
	// Interrupt says an interrupt was asked for under the lost node's
	// lease: it holds for this node's, and the turn is to end
	// interrupted.
	Interrupt bool
}

// ReadOnly says whether a tool only reads, so that a call to it cut by a
// lost node may run again.
type ReadOnly func(tool string) bool

// lostInFlight is the result of a call a lost node was running that is
// not run again.
const lostInFlight = "aborted: node lost: the rein node running this call stopped; it may have partly run. Check the current state before retrying it."

// Acquire takes up to n turns for this node to run, fewer when it is near
// its concurrency limit (Config.MaxRunning) and none at it: running turns
// whose lease expired (their node was lost) and the first queued turn of
// threads with no running or paused turn. Threads are taken with FOR UPDATE
// SKIP LOCKED, so nodes acquiring at once never take the same turn and
// never wait on each other; it may take fewer than there are (what another
// node locked or took meanwhile is passed over), so a node calls it on
// each poll. Each taken turn runs under a new lease with a fencing token
// the lost node's never equals: that node's late writes are refused.
func (s *Store) Acquire(ctx context.Context, n int, readOnly ReadOnly) ([]Taken, error) {
	return s.acquire(ctx, n, readOnly, 0)
}

// acquire is Acquire taking the queued turns of a thread with no running
// turn only once the node that ended its last turn (which starts them as
// it ends that turn) is gone, or the thread was not written for quiet:
// TakeTurns leaves a live node's queue to it for a lease's term, so it
// never races that node's own start of its next turn.
func (s *Store) acquire(ctx context.Context, n int, readOnly ReadOnly, quiet time.Duration) ([]Taken, error) {
	s.acq.Lock()
	defer s.acq.Unlock()
	if room := s.max - s.Running(); n > room {
		n = room
	}
	if n <= 0 {
		return nil, nil
	}
	var taken []Taken
	var fences []int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
SELECT th.id FROM threads th WHERE th.id IN (
	SELECT thread FROM turns WHERE status = 'running' AND lease_until < now()
	UNION
	SELECT q.thread FROM turns q JOIN threads qt ON qt.id = q.thread WHERE q.status = 'queued'
		AND (qt.updated < $2 OR NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node = qt.queue_node AND n.alive_until > now()))
		AND NOT EXISTS (SELECT 1 FROM turns r WHERE r.thread = q.thread AND r.status IN ('running', 'paused')))
ORDER BY th.updated LIMIT $1 FOR UPDATE OF th SKIP LOCKED`, n, time.Now().Add(-quiet).UnixNano())
		if err != nil {
			return fmt.Errorf("pgstore: acquire: %w", err)
		}
		threads, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("pgstore: acquire: %w", err)
		}
		for _, th := range threads {
			t, fence, err := s.take(ctx, tx, th, readOnly)
			if err != nil {
				return err
			}
			if fence != 0 {
				taken, fences = append(taken, t), append(fences, fence)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, t := range taken {
		s.hold(t.Turn.ID, fences[i])
	}
	return taken, nil
}

// take takes a turn of a thread whose row tx holds locked: its running turn
// whose lease expired, else its first queued turn. It returns the turn and
// the fencing token of its new lease, 0 when there was none to take.
func (s *Store) take(ctx context.Context, tx pgx.Tx, threadID string, readOnly ReadOnly) (Taken, int64, error) {
	var id, status string
	var started int64
	var input, spec string
	var interrupted bool
	err := tx.QueryRow(ctx, `
SELECT id, status, started, input, status = 'running' AND interrupt_fence = fence AND fence <> 0, output_spec FROM turns
WHERE thread = $1 AND ((status = 'running' AND lease_until < now()) OR status = 'queued')
ORDER BY status = 'running' DESC, seq LIMIT 1 FOR UPDATE`, threadID).Scan(&id, &status, &started, &input, &interrupted, &spec)
	if errors.Is(err, pgx.ErrNoRows) {
		// Taken or ended between the lookup and the lock.
		return Taken{}, 0, nil
	}
	if err != nil {
		return Taken{}, 0, fmt.Errorf("pgstore: acquire %s: %w", threadID, err)
	}
	t := Taken{Turn: session.Turn{ID: id, ThreadID: threadID, Status: session.TurnInProgress, Started: time.Unix(0, started)}}
	if t.Turn.OutputSpec, err = record.ParseOutputSpec(id, spec); err != nil {
		return Taken{}, 0, fmt.Errorf("pgstore: %w", err)
	}
	if status == statusQueued {
		var running bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM turns WHERE thread = $1 AND status IN ('running', 'paused'))`, threadID).Scan(&running); err != nil {
			return Taken{}, 0, fmt.Errorf("pgstore: acquire %s: %w", threadID, err)
		}
		if running {
			return Taken{}, 0, nil
		}
		if input != "[]" {
			if err := json.Unmarshal([]byte(input), &t.Turn.Input); err != nil {
				return Taken{}, 0, fmt.Errorf("pgstore: turn %s input: %w", id, err)
			}
		}
	} else {
		r, err := resumption(ctx, tx, threadID, id)
		if err != nil {
			return Taken{}, 0, err
		}
		if r != nil {
			// Answered and not yet resumed: it resumes here with the
			// answer the lost node acknowledged.
			t.Resume = r
			if t.Steers, err = pendingSteers(ctx, tx, id); err != nil {
				return Taken{}, 0, err
			}
		} else if err := s.goOn(ctx, tx, &t, readOnly); err != nil {
			return Taken{}, 0, err
		}
	}
	// An interrupt asked under the lost lease applies to the new one: the
	// taking node ends the turn interrupted (it reads it with Pending).
	t.Interrupt = interrupted
	var fence int64
	if err := tx.QueryRow(ctx, `
WITH f AS (SELECT nextval('fences') AS v)
UPDATE turns SET status = 'running', node = $2, fence = f.v, lease_until = now() + $3 * interval '1 millisecond',
	interrupt_fence = CASE WHEN $4 THEN f.v ELSE turns.interrupt_fence END
FROM f WHERE id = $1 RETURNING fence`, id, s.node, s.lease.Milliseconds(), interrupted).Scan(&fence); err != nil {
		return Taken{}, 0, fmt.Errorf("pgstore: acquire turn %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE threads SET updated = $2 WHERE id = $1`, threadID, time.Now().UnixNano()); err != nil {
		return Taken{}, 0, fmt.Errorf("pgstore: acquire turn %s: %w", id, err)
	}
	return t, fence, nil
}

// goOn prepares a lost node's turn to go on here: the calls it had in
// flight that only read are left to run again, the others are answered as
// aborted; the history and the unread steers are handed over.
func (s *Store) goOn(ctx context.Context, tx pgx.Tx, t *Taken, readOnly ReadOnly) error {
	t.Lost = true
	var n int64
	if err := tx.QueryRow(ctx, `SELECT nitems FROM threads WHERE id = $1`, t.Turn.ThreadID).Scan(&n); err != nil {
		return fmt.Errorf("pgstore: acquire turn %s: %w", t.Turn.ID, err)
	}
	items, err := queryItems(ctx, tx, `WHERE thread = $1 AND turn = $2`, t.Turn.ThreadID, t.Turn.ID)
	if err != nil {
		return err
	}
	k := 0
	for _, c := range llm.OpenCalls(items) {
		if readOnly != nil && readOnly(c.Name) {
			t.Rerun = append(t.Rerun, c)
			continue
		}
		k++
		it := llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: lostInFlight, Status: llm.ResultAborted})
		it.ID, it.TurnID = t.Turn.ID+".lost."+strconv.Itoa(k), t.Turn.ID
		parts, err := json.Marshal(it.Parts)
		if err != nil {
			return fmt.Errorf("pgstore: acquire turn %s: %w", t.Turn.ID, err)
		}
		if n, err = putItem(ctx, tx, t.Turn.ThreadID, n, it, parts); err != nil {
			return err
		}
	}
	if t.Items, err = queryItems(ctx, tx, `WHERE thread = $1`, t.Turn.ThreadID); err != nil {
		return err
	}
	t.Steers, err = pendingSteers(ctx, tx, t.Turn.ID)
	return err
}
