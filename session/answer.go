package session

import (
	"context"
	"encoding/json"

	"github.com/reinhq/rein/loop"
)

// AnswerStore is a store that commits the answer to a paused turn with the
// claim that resumes it (pgstore.Store), so that the answer is durable
// before Answer acknowledges it: a node that takes the turn over after the
// answering node stopped, before the answered item was recorded, resumes
// the turn with it (Continuation.Resume) rather than losing it.
type AnswerStore interface {
	// ClaimAnswer claims paused turn t, inProgress, as ClaimTurn does,
	// and stores answer a with it in the same commit.
	ClaimAnswer(ctx context.Context, t Turn, a loop.Answer) (Claim, error)
}

// Resumption is a paused turn's state and the answer it was being resumed
// with, as the store holds them: the answer was acknowledged and not yet
// recorded.
type Resumption struct {
	// State is the JSON of the turn's loop.State, as stored at its pause.
	State json.RawMessage
	// Answer is the acknowledged answer.
	Answer loop.Answer
}

// claimAnswer claims paused turn t, answered with a, in the store; th.mu is
// held. A store that is an AnswerStore commits the answer with the claim.
func (s *Scheduler) claimAnswer(ctx context.Context, th *thread, t *turnRun, a loop.Answer) error {
	as, ok := s.c.Store.(AnswerStore)
	if !ok {
		return s.claim(ctx, th, t)
	}
	_, err := as.ClaimAnswer(ctx, *t.rec, a)
	return err
}
