package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

// What a turn whose node was lost says, in the words the model and the
// user read.
const (
	lostCall    = "aborted: node lost: the rein node running this call stopped before it finished"
	lostPending = "aborted: node lost before the user answered"
	lostMarker  = "[rein] The previous turn was cut off: the rein node running it stopped (it was killed, crashed or lost the database) before the turn ended. " +
		"Calls that were running were aborted and may have partly run; check the current state before retrying them."
	lostError = "node lost: the rein node running the turn stopped and its lease expired before the turn ended"
)

// normalize closes the thread's running turns whose lease expired.
func (s *Store) normalize(ctx context.Context, threadID string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		return s.closeExpired(ctx, tx, threadID)
	})
}

// closeExpired closes, inside tx with the thread's row locked, each running
// turn of the thread whose lease expired (DESIGN §2.5): its calls without a
// result and its placeholders are answered as aborted, the steered input it
// never read joins the history, a marker tells the model, and the turn ends
// interrupted. Its lease is gone with it: a late write of the node that
// held it is refused. When the nodes take over lost turns
// (Config.TakeOver), a turn is left to them for a lease's term after its
// lease ended, and closed only when none took it.
func (s *Store) closeExpired(ctx context.Context, tx pgx.Tx, threadID string) error {
	rows, err := tx.Query(ctx, `SELECT id FROM turns WHERE thread = $1 AND status = 'running' AND lease_until < now() - $2 * interval '1 millisecond' FOR UPDATE`,
		threadID, s.takeOver.Milliseconds())
	if err != nil {
		return fmt.Errorf("pgstore: expired leases of %s: %w", threadID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("pgstore: expired leases of %s: %w", threadID, err)
	}
	for _, id := range ids {
		if err := closeLost(ctx, tx, threadID, id); err != nil {
			return err
		}
	}
	return nil
}

// closeLost closes one turn whose node was lost.
func closeLost(ctx context.Context, tx pgx.Tx, threadID, turnID string) error {
	var n int64
	if err := tx.QueryRow(ctx, `SELECT nitems FROM threads WHERE id = $1`, threadID).Scan(&n); err != nil {
		return fmt.Errorf("pgstore: close turn %s: %w", turnID, err)
	}
	items, err := queryItems(ctx, tx, `WHERE thread = $1 AND turn = $2`, threadID, turnID)
	if err != nil {
		return err
	}
	steers, err := pendingSteers(ctx, tx, turnID)
	if err != nil {
		return err
	}
	var out []llm.Item
	k := 0
	add := func(it llm.Item) {
		k++
		// The engine numbers a turn's items turn.1, turn.2, …: this suffix
		// is never one of them.
		it.ID, it.TurnID = turnID+".lost."+strconv.Itoa(k), turnID
		out = append(out, it)
	}
	for _, c := range llm.OpenCalls(items) {
		add(llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: lostCall, Status: llm.ResultAborted}))
	}
	for _, it := range items {
		if res := it.Result(); it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending {
			r := llm.ToolResult(llm.Result{CallID: res.CallID, Name: res.Name, Content: lostPending, Status: llm.ResultAborted})
			r.ID, r.TurnID = it.ID, turnID
			out = append(out, r)
		}
	}
	out = append(out, steers...)
	add(llm.Item{Role: llm.RoleUser, Origin: llm.OriginMarker, Parts: []llm.Part{{Kind: llm.PartText, Text: lostMarker}}})
	for _, it := range out {
		parts, err := json.Marshal(it.Parts)
		if err != nil {
			return fmt.Errorf("pgstore: close turn %s: %w", turnID, err)
		}
		if n, err = putItem(ctx, tx, threadID, n, it, parts); err != nil {
			return err
		}
	}
	now := time.Now().UnixNano()
	if _, err := tx.Exec(ctx, `UPDATE steers SET delivered = $2 WHERE turn = $1 AND delivered IS NULL`, turnID, now); err != nil {
		return fmt.Errorf("pgstore: close turn %s: %w", turnID, err)
	}
	if _, err := tx.Exec(ctx, `
UPDATE turns SET status = $2, stop_reason = $3, error = $4, ended = $5, state = NULL, pause = NULL, node = '', lease_until = NULL
WHERE id = $1`, turnID, string(record.StatusInterrupted), string(record.StopCancelled), lostError, now); err != nil {
		return fmt.Errorf("pgstore: close turn %s: %w", turnID, err)
	}
	return nil
}

// pendingSteers returns the steered input of a turn not yet recorded, in
// the order it was accepted.
func pendingSteers(ctx context.Context, tx pgx.Tx, turnID string) ([]llm.Item, error) {
	rows, err := tx.Query(ctx, `SELECT item FROM steers WHERE turn = $1 AND delivered IS NULL ORDER BY n`, turnID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: steers of %s: %w", turnID, err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: steers of %s: %w", turnID, err)
	}
	out := make([]llm.Item, 0, len(raw))
	for _, b := range raw {
		var it llm.Item
		if err := json.Unmarshal([]byte(b), &it); err != nil {
			return nil, fmt.Errorf("pgstore: steer of %s: %w", turnID, err)
		}
		out = append(out, it)
	}
	return out, nil
}
