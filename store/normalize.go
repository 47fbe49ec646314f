package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

// closing says why a turn is closed from outside the engine, in the words
// the model and the user will read.
type closing struct {
	// call answers a call that never got its result; pending replaces a
	// pause placeholder nobody answered.
	call, pending string
	marker        string
	err           string
	// status and stop are what the turn ends as.
	status record.Status
	stop   record.StopReason
}

// StopStoreError is the stop reason of a turn whose end could not be
// written to the store: the turn ran, but how it ended is not recorded.
const StopStoreError = record.StopStoreError

var (
	// cut: the process running the turn died (crash, kill, power loss).
	cut = closing{
		call:    "aborted: rein stopped before this call finished",
		pending: "aborted: rein stopped before the user answered",
		marker: "[rein] The previous turn was cut off: rein stopped (the process exited or crashed, or could not write its database) before the turn's end was recorded. " +
			"Calls that were running were aborted and may have partly run; check the current state before retrying them.",
		err:    "rein stopped before the turn's end was recorded (the process exited or crashed, or its last writes failed)",
		status: record.StatusInterrupted,
		stop:   record.StopCancelled,
	}
	// abandoned: the user moved on from a pause without answering.
	abandoned = closing{
		call:    "not run: the user moved on without answering",
		pending: "not answered: the user moved on without answering",
		marker: "[rein] The previous turn ended unanswered: the user moved on instead of answering its question or approval. " +
			"Do not assume an answer or an approval.",
		err:    "the user moved on without answering",
		status: record.StatusInterrupted,
		stop:   record.StopCancelled,
	}
)

// unrecorded is the closing of a turn this process ran whose end could not
// be written (a full disk): the turn failed with the write error, which is
// what it says, rather than that rein stopped.
func unrecorded(werr error) closing {
	return closing{
		call:    "aborted: the turn's end could not be recorded before this call's result was",
		pending: "aborted: the turn's end could not be recorded before the user answered",
		marker: "[rein] The previous turn's end could not be recorded: a write to rein's database failed (" + werr.Error() + "). " +
			"Its last steps may be missing from this history; check the current state before retrying anything.",
		err:    "the turn ran but its end could not be recorded: " + werr.Error(),
		status: record.StatusFailed,
		stop:   StopStoreError,
	}
}

// closingOf says how a cut turn is closed.
func closingOf(turnID string) closing {
	if err := unrecordedErr(turnID); err != nil {
		return unrecorded(err)
	}
	return cut
}

// Normalize closes the thread's cut turns (DESIGN §2.5): each turn left
// running by a process that is gone is marked interrupted, its calls
// without a result are answered as aborted, its placeholders likewise, the
// steered input it never read is appended, then a marker item telling the
// model the turn was cut. All of it commits at once; normalizing again
// changes nothing. Paused turns stay paused.
func (s *Store) Normalize(ctx context.Context, threadID string) error {
	var closed []string
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		closed, err = normalize(ctx, tx, threadID)
		return err
	})
	if err == nil {
		forgetUnrecorded(closed...)
	}
	return err
}

// normalize closes the cut turns of a thread inside tx and returns their
// ids; once the write commits, the caller forgets them as unrecorded.
func normalize(ctx context.Context, tx *sql.Tx, threadID string) ([]string, error) {
	cuts, err := cutTurns(ctx, tx, threadID)
	if err != nil {
		return nil, err
	}
	for _, id := range cuts {
		if err := closeTurn(ctx, tx, threadID, id, closingOf(id)); err != nil {
			return nil, err
		}
	}
	return cuts, nil
}

// cutTurns returns the ids of the thread's running turns that are cut.
func cutTurns(ctx context.Context, q querier, threadID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, owner FROM turns WHERE thread = ? AND status = 'running'`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: normalize %s: %w", threadID, err)
	}
	defer rows.Close()
	var cuts []string
	for rows.Next() {
		var id, who string
		if err := rows.Scan(&id, &who); err != nil {
			return nil, fmt.Errorf("store: normalize %s: %w", threadID, err)
		}
		if isCut(id, who) {
			cuts = append(cuts, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: normalize %s: %w", threadID, err)
	}
	return cuts, nil
}

// closeTurn ends a turn the engine could not end itself, keeping every call
// answered once, and marks it as why says.
func closeTurn(ctx context.Context, tx *sql.Tx, threadID, turnID string, why closing) error {
	items, err := queryItems(ctx, tx, `WHERE thread = ? AND turn = ?`, threadID, turnID)
	if err != nil {
		return err
	}
	steers, err := pendingSteers(ctx, tx, turnID)
	if err != nil {
		return err
	}
	for _, it := range closingItems(turnID, items, steers, why) {
		e, err := encodeItem(it)
		if err != nil {
			return err
		}
		if err := putItem(ctx, tx, threadID, e); err != nil {
			return err
		}
	}
	now := time.Now().UnixNano()
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = ?, stop_reason = ?, error = ?, ended = ?, state = NULL WHERE id = ?`,
		string(why.status), string(why.stop), why.err, now, turnID); err != nil {
		return fmt.Errorf("store: close turn %s: %w", turnID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pauses SET answered = ? WHERE turn = ? AND answered IS NULL`, now, turnID); err != nil {
		return fmt.Errorf("store: close turn %s: %w", turnID, err)
	}
	return nil
}

// closingItems returns what closing a turn writes, given its items and the
// steered input it never read, in order: an item with the id of one of the
// turn's items replaces it (a pause placeholder answered), the others are
// appended. Closing in the store and closing a loaded snapshot in memory
// (a store that cannot be written) both use it, so they agree.
func closingItems(turnID string, items, steers []llm.Item, why closing) []llm.Item {
	var out []llm.Item
	// Ids made here are the turn's id and a suffix the engine never uses
	// (it numbers items turn.1, turn.2, …).
	n := 0
	add := func(it llm.Item) {
		n++
		it.ID = turnID + ".closed." + strconv.Itoa(n)
		it.TurnID = turnID
		out = append(out, it)
	}
	// The engine records an assistant item before running its calls and
	// their results after, so every call left open belongs to the turn's
	// last assistant item and its results go at the end.
	for _, c := range llm.OpenCalls(items) {
		add(llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: why.call, Status: llm.ResultAborted}))
	}
	for _, it := range items {
		if res := it.Result(); it.Role == llm.RoleTool && res != nil && res.Status == llm.ResultPending {
			r := llm.ToolResult(llm.Result{CallID: res.CallID, Name: res.Name, Content: why.pending, Status: llm.ResultAborted})
			r.ID, r.TurnID = it.ID, turnID
			out = append(out, r)
		}
	}
	// Steered input is never dropped: it joins the history, under the id
	// its sender was given, for the next turn to read.
	out = append(out, steers...)
	add(llm.Item{Role: llm.RoleUser, Origin: llm.OriginMarker, Parts: []llm.Part{{Kind: llm.PartText, Text: why.marker}}})
	return out
}

// Snapshot is a thread as loaded: its settings, turns and history. It has
// no JSON form of its own: protocol.ExportOf makes the one rein prints.
type Snapshot struct {
	Thread record.Thread
	Turns  []record.Turn
	Items  []llm.Item
}

// Last returns the latest turn, or nil when there is none.
func (s *Snapshot) Last() *record.Turn {
	if len(s.Turns) == 0 {
		return nil
	}
	return &s.Turns[len(s.Turns)-1]
}

// Load reads the thread with its turns cut by a crash closed (Normalize):
// what a process does when it opens a thread to show or continue it. It
// writes only when a turn is cut, and when that write fails (a full disk, a
// read-only file) the turns are closed in the snapshot alone, as the write
// would have closed them: reading a thread never depends on writing it.
func (s *Store) Load(ctx context.Context, threadID string) (*Snapshot, error) {
	snap, cuts, err := s.read(ctx, threadID)
	if err != nil || len(cuts) == 0 {
		return snap, err
	}
	if err := s.Normalize(ctx, threadID); err == nil {
		snap, _, err := s.read(ctx, threadID)
		return snap, err
	}
	for _, id := range cuts {
		if err := s.closeInMemory(ctx, snap, id); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// read reads the thread in one read transaction, so a turn finishing
// meanwhile cannot leave items without their turn's status, and returns
// the ids of its cut turns.
func (s *Store) read(ctx context.Context, threadID string) (*Snapshot, []string, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("store: load %s: %w", threadID, err)
	}
	defer tx.Rollback()
	t, err := scanThread(tx.QueryRowContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE id = ?`, threadID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("thread %s: %w", threadID, ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: thread %s: %w", threadID, err)
	}
	snap := &Snapshot{Thread: t}
	if snap.Items, err = queryItems(ctx, tx, `WHERE thread = ?`, threadID); err != nil {
		return nil, nil, err
	}
	if snap.Turns, err = queryTurns(ctx, tx, threadID); err != nil {
		return nil, nil, err
	}
	cuts, err := cutTurns(ctx, tx, threadID)
	if err != nil {
		return nil, nil, err
	}
	return snap, cuts, nil
}

// closeInMemory closes a cut turn in a snapshot as closeTurn closes it in
// the store.
func (s *Store) closeInMemory(ctx context.Context, snap *Snapshot, turnID string) error {
	steers, err := pendingSteers(ctx, s.db, turnID)
	if err != nil {
		return err
	}
	var items []llm.Item
	at := make(map[string]int)
	for i, it := range snap.Items {
		at[it.ID] = i
		if it.TurnID == turnID {
			items = append(items, it)
		}
	}
	why := closingOf(turnID)
	for _, it := range closingItems(turnID, items, steers, why) {
		if i, ok := at[it.ID]; ok {
			snap.Items[i] = it
			continue
		}
		snap.Items = append(snap.Items, it)
	}
	for i := range snap.Turns {
		if t := &snap.Turns[i]; t.ID == turnID {
			t.Status, t.StopReason, t.Error, t.Ended, t.Pause = why.status, why.stop, why.err, time.Now(), nil
		}
	}
	return nil
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
