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

// AnswerStarter is an AnswerStore that also keeps when an answer began to
// be carried out (pgstore.Store). The scheduler marks it just before an
// approved call that changes things runs: a node that takes the turn over
// afterwards (Resumption.Begun) knows the call may have run, partly or
// whole, and answers it "aborted: node lost" for the model to decide,
// rather than running it a second time.
type AnswerStarter interface {
	AnswerStore
	// StartAnswer marks that the answer stored with the claim of running
	// turn turnID is being carried out. A store refusing it because this
	// node no longer holds the turn returns an error matching
	// ErrLeaseLost.
	StartAnswer(ctx context.Context, threadID, turnID string) error
}

// Resumption is a paused turn's state and the answer it was being resumed
// with, as the store holds them: the answer was acknowledged and not yet
// recorded.
type Resumption struct {
	// State is the JSON of the turn's loop.State, as stored at its pause.
	State json.RawMessage
	// Answer is the acknowledged answer.
	Answer loop.Answer
	// Begun says the node that was lost had begun carrying the answer out
	// (AnswerStarter): an approved call was running. Unless the call only
	// reads, the turn does not resume with the answer (the call would run
	// twice); it goes on from its committed items, the call answered
	// "aborted: node lost".
	Begun bool
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
