package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// closing says why a turn is closed from outside the engine, in the words
// the model and the user will read.
type closing struct {
	// call answers a call that never got its result; pending replaces a
	// pause placeholder nobody answered.
	call, pending string
	marker        string
	err           string
}

var (
	// cut: the process running the turn died (crash, kill, power loss).
	cut = closing{
		call:    "aborted: rein stopped before this call finished",
		pending: "aborted: rein stopped before the user answered",
		marker: "[rein] The previous turn was cut off: rein stopped (the process exited or crashed) before the turn finished. " +
			"Calls that were running were aborted and may have partly run; check the current state before retrying them.",
		err: "rein stopped before the turn finished",
	}
	// abandoned: the user moved on from a pause without answering.
	abandoned = closing{
		call:    "not run: the user moved on without answering",
		pending: "not answered: the user moved on without answering",
		marker: "[rein] The previous turn ended unanswered: the user moved on instead of answering its question or approval. " +
			"Do not assume an answer or an approval.",
		err: "the user moved on without answering",
	}
)

// Normalize closes the thread's cut turns (DESIGN §2.5): each turn left
// running by a process that is gone is marked interrupted, its calls
// without a result are answered as aborted, its placeholders likewise, the
// steered input it never read is appended, then a marker item telling the
// model the turn was cut. All of it commits at once; normalizing again
// changes nothing. Paused turns stay paused.
func (s *Store) Normalize(ctx context.Context, threadID string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return normalize(ctx, tx, threadID)
	})
}

// normalize closes the cut turns of a thread inside tx.
func normalize(ctx context.Context, tx *sql.Tx, threadID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, owner FROM turns WHERE thread = ? AND status = 'running'`, threadID)
	if err != nil {
		return fmt.Errorf("store: normalize %s: %w", threadID, err)
	}
	var cuts []string
	for rows.Next() {
		var id, who string
		if err := rows.Scan(&id, &who); err != nil {
			rows.Close()
			return fmt.Errorf("store: normalize %s: %w", threadID, err)
		}
		if isCut(id, who) {
			cuts = append(cuts, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: normalize %s: %w", threadID, err)
	}
	for _, id := range cuts {
		if err := closeTurn(ctx, tx, threadID, id, cut); err != nil {
			return err
		}
	}
	return nil
}

// closeTurn ends a turn the engine could not end itself, keeping every call
// answered once, and marks it interrupted.
func closeTurn(ctx context.Context, tx *sql.Tx, threadID, turnID string, why closing) error {
	items, err := queryItems(ctx, tx, `WHERE thread = ? AND turn = ?`, threadID, turnID)
	if err != nil {
		return err
	}
	// Ids made here are the turn's id and a suffix the engine never uses
	// (it numbers items turn.1, turn.2, …).
	n := 0
	add := func(it llm.Item) error {
		n++
		it.ID = turnID + ".closed." + strconv.Itoa(n)
		it.TurnID = turnID
		e, err := encodeItem(it)
		if err != nil {
			return err
		}
		return putItem(ctx, tx, threadID, e)
	}
	// The engine records an assistant item before running its calls and
	// their results after, so every call left open belongs to the turn's
	// last assistant item and its results go at the end.
	for _, c := range loop.OpenCalls(items) {
		if err := add(llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: why.call, Status: llm.ResultAborted})); err != nil {
			return err
		}
	}
	for _, it := range items {
		if res := it.Result(); it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending {
			r := llm.ToolResult(llm.Result{CallID: res.CallID, Name: res.Name, Content: why.pending, Status: llm.ResultAborted})
			r.ID, r.TurnID = it.ID, turnID
			e, err := encodeItem(r)
			if err != nil {
				return err
			}
			if err := putItem(ctx, tx, threadID, e); err != nil {
				return err
			}
		}
	}
	steers, err := pendingSteers(ctx, tx, turnID)
	if err != nil {
		return err
	}
	for _, it := range steers {
		// Steered input is never dropped: it joins the history, under the
		// id its sender was given, for the next turn to read.
		e, err := encodeItem(it)
		if err != nil {
			return err
		}
		if err := putItem(ctx, tx, threadID, e); err != nil {
			return err
		}
	}
	if err := add(llm.Item{Role: llm.RoleUser, Origin: llm.OriginMarker, Parts: []llm.Part{{Kind: llm.PartText, Text: why.marker}}}); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = ?, stop_reason = ?, error = ?, ended = ?, state = NULL WHERE id = ?`,
		string(loop.StatusInterrupted), string(loop.StopCancelled), why.err, now, turnID); err != nil {
		return fmt.Errorf("store: close turn %s: %w", turnID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pauses SET answered = ? WHERE turn = ? AND answered IS NULL`, now, turnID); err != nil {
		return fmt.Errorf("store: close turn %s: %w", turnID, err)
	}
	return nil
}

// Snapshot is a thread as loaded: its settings, turns and history.
type Snapshot struct {
	Thread Thread     `json:"thread"`
	Turns  []Turn     `json:"turns"`
	Items  []llm.Item `json:"items"`
}

// Last returns the latest turn, or nil when there is none.
func (s *Snapshot) Last() *Turn {
	if len(s.Turns) == 0 {
		return nil
	}
	return &s.Turns[len(s.Turns)-1]
}

// Load normalizes the thread (closing turns cut by a crash), then reads it:
// what a process does when it opens a thread to show or continue it.
func (s *Store) Load(ctx context.Context, threadID string) (*Snapshot, error) {
	if err := s.Normalize(ctx, threadID); err != nil {
		return nil, err
	}
	t, err := s.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	// The reads are one snapshot: a turn finishing between them cannot
	// leave items without their turn's status.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: load %s: %w", threadID, err)
	}
	defer tx.Rollback()
	snap := &Snapshot{Thread: t}
	if snap.Items, err = queryItems(ctx, tx, `WHERE thread = ?`, threadID); err != nil {
		return nil, err
	}
	if snap.Turns, err = queryTurns(ctx, tx, threadID); err != nil {
		return nil, err
	}
	return snap, nil
}

// pendingSteers returns the steered input of a turn not yet recorded, in
// the order it arrived.
func pendingSteers(ctx context.Context, q querier, turnID string) ([]llm.Item, error) {
	rows, err := q.QueryContext(ctx, `SELECT item FROM steers WHERE turn = ? AND delivered IS NULL ORDER BY created, rowid`, turnID)
	if err != nil {
		return nil, fmt.Errorf("store: steers of %s: %w", turnID, err)
	}
	defer rows.Close()
	var out []llm.Item
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("store: steers of %s: %w", turnID, err)
		}
		var it llm.Item
		if err := json.Unmarshal(b, &it); err != nil {
			return nil, fmt.Errorf("store: steers of %s: %w", turnID, err)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}
