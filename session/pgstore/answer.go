package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

var (
	_ session.AnswerStore   = (*Store)(nil)
	_ session.AnswerStarter = (*Store)(nil)
)

// ClaimAnswer implements session.AnswerStore: in one transaction the
// paused turn t becomes the thread's running turn under a new lease of
// this node (as ClaimTurn) and the answer is stored with it. Once it
// returns the answer is durable: should this node stop before the engine
// records the answered item, the node that takes the turn over (Acquire)
// resumes it with the answer. A turn that is not paused is refused: one
// running (answered elsewhere meanwhile) with an error matching
// session.ErrTurnBusy, one that ended with ErrTurnEnded.
func (s *Store) ClaimAnswer(ctx context.Context, t session.Turn, a loop.Answer) (session.Claim, error) {
	if t.ID == "" || t.ThreadID == "" {
		return session.Claim{}, errors.New("pgstore: ClaimAnswer: the turn needs an id and a thread id")
	}
	answer, err := json.Marshal(a)
	if err != nil {
		return session.Claim{}, fmt.Errorf("pgstore: answer of turn %s: %w", t.ID, err)
	}
	f, started, err := claimFields(t)
	if err != nil {
		return session.Claim{}, err
	}
	var c session.Claim
	var fence int64
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockThread(ctx, tx, t.ThreadID); err != nil {
			return err
		}
		var status, node string
		err := tx.QueryRow(ctx, `SELECT status, node FROM turns WHERE id = $1 AND thread = $2 FOR UPDATE`, t.ID, t.ThreadID).Scan(&status, &node)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("pgstore: thread %s has no turn %s to answer", t.ThreadID, t.ID)
		case err != nil:
			return fmt.Errorf("pgstore: answer turn %s: %w", t.ID, err)
		case status == statusRunning:
			return &busyError{ThreadID: t.ThreadID, TurnID: t.ID, Node: node}
		case status != statusPaused:
			return fmt.Errorf("thread %s: turn %s is %s: %w", t.ThreadID, t.ID, status, ErrTurnEnded)
		}
		var n int64
		c, fence, n, err = s.claim(ctx, tx, t, f, started, 0)
		if err != nil {
			return err
		}
		c.Items = int(n)
		if _, err := tx.Exec(ctx, `UPDATE turns SET resume = $2, resume_begun = false WHERE id = $1`, t.ID, string(answer)); err != nil {
			return fmt.Errorf("pgstore: answer turn %s: %w", t.ID, err)
		}
		return nil
	})
	if err != nil {
		return session.Claim{}, err
	}
	s.hold(t.ID, fence)
	return c, nil
}

// StartAnswer implements session.AnswerStarter: it marks, under this
// node's lease on the turn, that the answer ClaimAnswer stored began to be
// carried out. A node that takes the turn over from here gets the
// resumption with Begun set. A turn this node no longer holds, or that
// holds no answer, is refused with a *LeaseLostError.
func (s *Store) StartAnswer(ctx context.Context, threadID, turnID string) error {
	held := s.fence(turnID)
	if held == 0 {
		return &LeaseLostError{TurnID: turnID}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE turns SET resume_begun = true WHERE id = $1 AND thread = $2 AND fence = $3 AND status = 'running' AND resume IS NOT NULL`,
		turnID, threadID, held)
	if err != nil {
		return fmt.Errorf("pgstore: start the answer of turn %s: %w", turnID, err)
	}
	if tag.RowsAffected() == 0 {
		return &LeaseLostError{TurnID: turnID, Held: held}
	}
	return nil
}

// resumption returns, for a running turn a lost node was resuming, its
// paused state and the answer it was resuming with when that answer is
// not recorded yet (the pause's placeholder is still pending): the turn
// resumes with it on the node taking it over, or, when the lost node had
// begun carrying it out (StartAnswer), goes on from its committed items
// with the answered call cut (Resumption.Begun). nil when the turn goes on
// from its committed items.
func resumption(ctx context.Context, tx pgx.Tx, threadID, turnID string) (*session.Resumption, error) {
	var state, answer *string
	var pending, begun bool
	err := tx.QueryRow(ctx, `
SELECT state, resume, EXISTS (SELECT 1 FROM items WHERE thread = $2 AND turn = $1 AND pending), resume_begun
FROM turns WHERE id = $1`, turnID, threadID).Scan(&state, &answer, &pending, &begun)
	if err != nil {
		return nil, fmt.Errorf("pgstore: acquire turn %s: %w", turnID, err)
	}
	if state == nil || answer == nil || !pending {
		return nil, nil
	}
	if !json.Valid([]byte(*state)) {
		return nil, fmt.Errorf("pgstore: turn %s: its paused state is not JSON, so nothing can resume it", turnID)
	}
	r := &session.Resumption{State: json.RawMessage(*state), Begun: begun}
	if err := json.Unmarshal([]byte(*answer), &r.Answer); err != nil {
		return nil, fmt.Errorf("pgstore: turn %s: its stored answer: %w", turnID, err)
	}
	return r, nil
}
