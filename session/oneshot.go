package session

import (
	"context"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// A one-shot client (rein run, rein answer, a program running one turn)
// starts or answers one turn and waits for where it stops, on the same path
// as every other door: the turn is claimed, journaled, traced, watched and
// recorded by the scheduler.

// RunTurn starts a turn of input on the thread and waits until it ends or
// pauses, returning its record. When ctx ends first the turn is
// interrupted and RunTurn waits for its end to be recorded (an interrupted
// turn is a turn of the thread too) and returns it.
//
// A turn that starts at once runs on the caller's goroutine (the caller
// waits for it anyway): no goroutine is started for it and none woken when
// it ends. A turn queued behind the thread's running one is waited for.
func (s *Scheduler) RunTurn(ctx context.Context, threadID string, input llm.Item) (Turn, error) {
	if err := checkInput(&input); err != nil {
		return Turn{}, err
	}
	return s.runTurn(ctx, threadID, []llm.Item{input}, nil)
}

// AnswerTurn answers the thread's paused turn (see Answer) and waits until
// the turn ends or pauses again, as RunTurn does.
func (s *Scheduler) AnswerTurn(ctx context.Context, threadID string, a loop.Answer) (Turn, error) {
	if err := s.Answer(ctx, threadID, a); err != nil {
		return Turn{}, err
	}
	return s.Follow(ctx, threadID, a.TurnID)
}

// Follow waits until turn turnID of the thread ends or pauses, and returns
// its record. When ctx ends first the turn is interrupted, and Follow
// waits for its end to be recorded and returns it (interrupted, or however
// it ended first): the caller gave up on the turn, not on the thread.
func (s *Scheduler) Follow(ctx context.Context, threadID, turnID string) (Turn, error) {
	rec, err := s.Wait(ctx, threadID, turnID)
	if err == nil || ctx.Err() == nil {
		return rec, err
	}
	stop := context.WithoutCancel(ctx)
	// An interrupt that comes too late (the turn ended meanwhile) changes
	// nothing; Wait then returns the end at once.
	_ = s.Interrupt(stop, threadID, turnID)
	return s.Wait(stop, threadID, turnID)
}
