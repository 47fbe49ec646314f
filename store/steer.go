package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

// AddSteer persists input steered into a running turn and returns it with
// the item id it will be recorded under: the durable acceptance a caller
// gets back (DESIGN §9). The item is not in the history yet — it joins it
// when the engine drains it before its next model request (recording it
// under that id marks it delivered), so it can never land between a call
// and its result. If the process dies first, Normalize appends it to the
// history of the cut turn. It fails with ErrNotFound for an unknown turn
// and ErrTurnNotRunning when the turn is not running.
func (s *Store) AddSteer(ctx context.Context, turnID string, it llm.Item) (llm.Item, error) {
	if it.ID == "" {
		it.ID = newID("steer")
	}
	it.Role, it.TurnID = llm.RoleUser, turnID
	if it.Origin == llm.OriginInput {
		it.Origin = llm.OriginSteer
	}
	b, err := json.Marshal(it)
	if err != nil {
		return llm.Item{}, fmt.Errorf("store: steer: %w", err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var threadID, status string
		err := tx.QueryRowContext(ctx, `SELECT thread, status FROM turns WHERE id = ?`, turnID).Scan(&threadID, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("turn %s: %w", turnID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: steer: %w", err)
		}
		if record.Status(status) != StatusRunning {
			return fmt.Errorf("turn %s is %s: %w", turnID, status, ErrTurnNotRunning)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO steers (id, thread, turn, item, created) VALUES (?, ?, ?, ?, ?)`,
			it.ID, threadID, turnID, string(b), time.Now().UnixNano())
		if err != nil {
			return fmt.Errorf("store: steer: %w", err)
		}
		return nil
	})
	if err != nil {
		return llm.Item{}, err
	}
	return it, nil
}

// PendingSteers returns the input steered into a turn and not yet recorded
// in its history, in the order it arrived: what a scheduler restarted
// mid-turn still has to deliver.
func (s *Store) PendingSteers(ctx context.Context, turnID string) ([]llm.Item, error) {
	return pendingSteers(ctx, s.db, turnID)
}
