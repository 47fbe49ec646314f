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
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM turns WHERE id = $1 AND thread = $2`, turnID, threadID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("pgstore: thread %s has no turn %s", threadID, turnID)
		}
		if err != nil {
			return fmt.Errorf("pgstore: steer: %w", err)
		}
		if status != statusRunning {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, ErrTurnNotRunning)
		}
		var unread int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM steers WHERE turn = $1 AND delivered IS NULL`, turnID).Scan(&unread); err != nil {
			return fmt.Errorf("pgstore: steer: %w", err)
		}
		if unread >= maxPending {
			return fmt.Errorf("pgstore: turn %s holds %d steered inputs it has not read yet: %w", turnID, unread, ErrTooManySteers)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO steers (id, thread, turn, item, created) VALUES ($1, $2, $3, $4, $5)`,
			it.ID, threadID, turnID, string(b), time.Now().UnixNano()); err != nil {
			return fmt.Errorf("pgstore: steer: %w", err)
		}
		return nil
	})
}
