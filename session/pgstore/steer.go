package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// ErrTurnNotRunning is matched by the error for input steered into a turn
// that is not running: session's.
var ErrTurnNotRunning = session.ErrTurnNotRunning

// ErrTooManySteers is matched by the error for input steered into a turn
// that has not read maxPending earlier ones yet (its round runs long):
// wait for the turn to read them, or interrupt it. It is session's, so
// every door answers it alike.
var ErrTooManySteers = session.ErrTooManySteers

// AddSteer implements session.Store: the input is committed, the durable
// acceptance, before the turn's runner (on whichever node) reads it; when
// the runner records it under its id it is delivered. If the node is lost
// first, the turn's closing appends it to the history.
func (s *Store) AddSteer(ctx context.Context, threadID, turnID string, it llm.Item) error {
	if it.ID == "" {
		it.ID = newID("steer")
	}
	it.Role, it.TurnID = llm.RoleUser, turnID
	if it.Origin == llm.OriginInput {
		it.Origin = llm.OriginSteer
	}
	b, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("pgstore: steer: %w", err)
	}
	// One round trip: the statements of a batch are one transaction,
	// committed when the last has run; each reads the rows as they are
	// once the thread's lock is held.
	q := &pgx.Batch{}
	q.Queue(`SELECT 1 FROM threads WHERE id = $1 FOR UPDATE`, threadID)
	q.Queue(`SELECT status, (SELECT count(*) FROM steers WHERE turn = $1 AND delivered IS NULL) FROM turns WHERE id = $1 AND thread = $2`, turnID, threadID)
	q.Queue(`
INSERT INTO steers (id, thread, turn, item, created)
SELECT $1, $2, $3, $4, $5 FROM turns WHERE id = $3 AND thread = $2 AND status = 'running'
	AND (SELECT count(*) FROM steers WHERE turn = $3 AND delivered IS NULL) < $6`,
		it.ID, threadID, turnID, string(b), time.Now().UnixNano(), maxPending)
	br := s.pool.SendBatch(ctx, q)
	defer br.Close()
	var refused error
	var one int
	switch err := br.QueryRow().Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		refused = notFound(threadID)
	case err != nil:
		return fmt.Errorf("pgstore: steer: %w", err)
	}
	var status string
	var unread int
	switch err := br.QueryRow().Scan(&status, &unread); {
	case refused != nil:
	case errors.Is(err, pgx.ErrNoRows):
		refused = fmt.Errorf("pgstore: thread %s has no turn %s", threadID, turnID)
	case err != nil:
		return fmt.Errorf("pgstore: steer: %w", err)
	case status != statusRunning:
		refused = fmt.Errorf("turn %s is %s: %w", turnID, status, ErrTurnNotRunning)
	case unread >= maxPending:
		refused = fmt.Errorf("pgstore: turn %s holds %d steered inputs it has not read yet: %w", turnID, unread, ErrTooManySteers)
	}
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("pgstore: steer: %w", err)
	}
	// Close waits for the batch's transaction to end: its commit.
	if err := br.Close(); err != nil {
		return fmt.Errorf("pgstore: steer: %w", err)
	}
	if refused != nil {
		return refused
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("pgstore: steer of turn %s was not stored", turnID)
	}
	return nil
}
