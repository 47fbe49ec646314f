package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/llm"
)

// Record implements session.Store: it appends the item to the thread's
// history, or replaces the pause placeholder with its id, and returns once
// it is committed. An item of a running turn commits only under the
// turn's current lease: a node that lost it gets a *LeaseLostError and
// nothing is written.
func (s *Store) Record(ctx context.Context, threadID string, it llm.Item) error {
	if it.ID == "" {
		it.ID = newID("item")
	}
	parts, err := json.Marshal(it.Parts)
	if err != nil {
		return fmt.Errorf("pgstore: item %s: %w", it.ID, err)
	}
	return s.record(ctx, &recordOp{threadID: threadID, it: it, parts: parts, fence: s.fence(it.TurnID), done: make(chan error, 1)})
}

// newID returns a fresh random id such as "item_…".
func newID(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:16])
}

// inTx runs fn in a transaction and commits it.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: commit: %w", err)
	}
	return nil
}

// lockThread locks the thread's row for the transaction, the first lock
// every write takes (threads before turns: no two writers wait on each
// other), and returns how many items it holds.
func lockThread(ctx context.Context, tx pgx.Tx, threadID string) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, `SELECT nitems FROM threads WHERE id = $1 FOR UPDATE`, threadID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, notFound(threadID)
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: thread %s: %w", threadID, err)
	}
	return n, nil
}

// checkFence refuses a write of turnID unless the writer holds the turn's
// current lease (held, 0 for none), or the turn is not running (a paused
// turn closed unanswered). The turn's row stays share-locked until the
// write commits, so a takeover (which changes the token) waits for it: no
// write of the old lease commits after the new one is granted.
func checkFence(ctx context.Context, tx pgx.Tx, turnID string, held int64) error {
	if turnID == "" {
		return nil
	}
	var status, node string
	var fence int64
	err := tx.QueryRow(ctx, `SELECT status, fence, node FROM turns WHERE id = $1 FOR SHARE`, turnID).Scan(&status, &fence, &node)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: turn %s: %w", turnID, err)
	}
	return fenceErr(turnID, held, err == nil, status, fence, node)
}

// fenceErr is checkFence's rule, given what the turn's row holds (found is
// false when there is no row).
func fenceErr(turnID string, held int64, found bool, status string, fence int64, node string) error {
	if !found {
		if held != 0 {
			return &LeaseLostError{TurnID: turnID, Held: held}
		}
		return nil
	}
	running := status == statusRunning
	if held != 0 {
		if !running || fence != held {
			e := &LeaseLostError{TurnID: turnID, Held: held, Current: fence}
			if running {
				e.Node = node
			}
			return e
		}
		return nil
	}
	if running {
		return &LeaseLostError{TurnID: turnID, Current: fence, Node: node}
	}
	return nil
}

// putItem appends it to the thread holding n items (its row locked), or
// replaces the pause placeholder with its id, and returns how many items
// the thread holds then.
func putItem(ctx context.Context, tx pgx.Tx, threadID string, n int64, it llm.Item, parts []byte) (int64, error) {
	res := it.Result()
	pending := it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending
	now := time.Now().UnixNano()
	replaced := false
	if it.Role == llm.RoleTool {
		// Only a result replaces an item: the answer of a placeholder.
		tag, err := tx.Exec(ctx, `UPDATE items SET turn = $3, role = $4, origin = $5, pending = $6, parts = $7 WHERE thread = $1 AND id = $2 AND pending`,
			threadID, it.ID, it.TurnID, it.Role.String(), it.Origin.String(), pending, string(parts))
		if err != nil {
			return 0, fmt.Errorf("pgstore: item %s: %w", it.ID, err)
		}
		replaced = tag.RowsAffected() == 1
	}
	if !replaced {
		tag, err := tx.Exec(ctx, `
INSERT INTO items (thread, seq, id, turn, role, origin, pending, parts, created) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (thread, id) DO NOTHING`,
			threadID, n+1, it.ID, it.TurnID, it.Role.String(), it.Origin.String(), pending, string(parts), now)
		if err != nil {
			return 0, fmt.Errorf("pgstore: item %s: %w", it.ID, err)
		}
		if tag.RowsAffected() == 0 {
			return 0, fmt.Errorf("pgstore: item %s of thread %s is recorded and is not a pause placeholder; history is append-only", it.ID, threadID)
		}
		title := ""
		if it.Role == llm.RoleUser && it.Origin == llm.OriginInput {
			// The first thing the user said names the thread in lists.
			title = shortTitle(it.Text())
		}
		n++
		if _, err := tx.Exec(ctx, `UPDATE threads SET nitems = $2, title = CASE WHEN title = '' THEN $3 ELSE title END WHERE id = $1`, threadID, n, title); err != nil {
			return 0, fmt.Errorf("pgstore: thread %s: %w", threadID, err)
		}
	}
	if it.Origin == llm.OriginSteer {
		if _, err := tx.Exec(ctx, `UPDATE steers SET delivered = $2 WHERE id = $1 AND delivered IS NULL`, it.ID, now); err != nil {
			return 0, fmt.Errorf("pgstore: steer %s: %w", it.ID, err)
		}
	}
	return n, nil
}
