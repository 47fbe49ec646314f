package rein

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

// ErrPaused is returned by Run when the thread's last turn waits for an
// answer; call Answer first.
var ErrPaused = errors.New("rein: the thread's last turn is paused; answer it with Thread.Answer")

// ErrNotPaused is returned by Answer when no turn of the thread waits for
// an answer.
var ErrNotPaused = loop.ErrNotPaused

// ErrNoTurn is returned by Steer and Interrupt when no turn of the thread
// is running.
var ErrNoTurn = errors.New("rein: no turn of the thread is running; start one with Thread.Run")

// Thread is a conversation: its turns run one at a time, each seeing the
// items of the turns before. The agent's store holds it (in memory unless
// Options.DB names a file).
type Thread struct {
	agent *Agent
	id    string
	// err is why the thread could not be made; its turns return it.
	err error

	mu sync.Mutex // held by Run and Answer: one turn at a time
	// h lets the agent forget the thread once no handle of it is left.
	h *handle
}

// NewThread starts a thread with the agent's settings (its workspace,
// sandbox mode, approval policy, instructions and round budget, which the
// thread keeps). Once no Thread of it is reachable the agent forgets it:
// in memory the thread is gone (a turn of it still paused is interrupted),
// with a DB it stays in the store for OpenThread.
func (a *Agent) NewThread() *Thread {
	t := &Thread{agent: a}
	s, err := a.settings()
	if err == nil {
		var th session.Thread
		th, err = a.sched.CreateThread(context.Background(), s)
		t.id = th.ID
	}
	if err != nil {
		t.err = fmt.Errorf("rein: new thread: %w", err)
		return t
	}
	a.hold(t)
	return t
}

// OpenThread continues a thread of the agent's store (Options.DB): one an
// earlier agent, or rein run, started. A turn of it that was paused can be
// answered; its settings are its own, except the model, which is the
// agent's.
func (a *Agent) OpenThread(ctx context.Context, id string) (*Thread, error) {
	th, err := a.sched.ResumeThread(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rein: %w", err)
	}
	t := &Thread{agent: a, id: th.ID}
	a.hold(t)
	return t, nil
}

// ID returns the thread id.
func (t *Thread) ID() string { return t.id }

// History returns the thread's items so far, the running or paused turn's
// items up to now included. The slice is the caller's.
func (t *Thread) History() []llm.Item {
	if t.err != nil {
		return nil
	}
	snap, err := t.agent.sched.ReadThread(context.Background(), t.id)
	if err != nil {
		return nil
	}
	return snap.Items
}

// Run runs one turn of prompt and returns how it ended. When ctx ends first
// the turn is interrupted and Run returns its interrupted outcome. The
// error is the failed turn's (Outcome.Err), or says why the turn could not
// start (ErrPaused: the thread's last turn waits for an answer).
func (t *Thread) Run(ctx context.Context, prompt string) (*Outcome, error) {
	return t.run(ctx, nil, prompt)
}

// run runs one turn of prompt, asking for the structured answer output
// (nil: none).
func (t *Thread) run(ctx context.Context, output *Output, prompt string) (*Outcome, error) {
	if t.err != nil {
		return nil, t.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.agent
	if output != nil || a.asking(t.id) {
		// Refused before ask changes what the paused turn asks for;
		// otherwise RunTurn refuses a paused thread itself.
		if cur, ok, err := a.sched.Active(ctx, t.id); err != nil {
			return nil, fmt.Errorf("rein: %w", err)
		} else if ok && cur.Status == session.TurnPaused {
			return nil, ErrPaused
		}
	}
	a.ask(t.id, output)
	// RunTurn runs the turn on this goroutine when it starts at once.
	rec, err := a.sched.RunTurn(ctx, t.id, llm.UserText(prompt))
	if rec.ID == "" {
		// Not started.
		if errors.Is(err, session.ErrTurnPaused) {
			return nil, ErrPaused
		}
		return nil, fmt.Errorf("rein: %w", err)
	}
	return t.ended(ctx, rec.ID, rec, err)
}

// Answer answers the paused turn and runs it on, returning how it ended
// (or paused again). An answer for another turn or call is refused.
func (t *Thread) Answer(ctx context.Context, ans Answer) (*Outcome, error) {
	if t.err != nil {
		return nil, t.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, err := t.agent.sched.AnswerTurn(ctx, t.id, ans)
	return t.ended(ctx, ans.TurnID, rec, err)
}

// Steer adds text to the running turn: the model reads it before its next
// round (or, when the turn is ending, it starts the thread's next turn).
// It returns ErrNoTurn when no turn runs, and ErrPaused when the turn
// waits for an answer instead.
func (t *Thread) Steer(ctx context.Context, text string) error {
	cur, err := t.active(ctx)
	if err != nil {
		return err
	}
	if _, err := t.agent.sched.Steer(ctx, t.id, cur, llm.UserText(text)); errors.Is(err, session.ErrTurnPaused) {
		return ErrPaused
	} else if err != nil {
		return fmt.Errorf("rein: %w", err)
	}
	return nil
}

// Interrupt interrupts the running (or paused) turn: its running tools get
// a grace period, and Run returns its outcome, interrupted. It returns
// ErrNoTurn when no turn runs.
func (t *Thread) Interrupt(ctx context.Context) error {
	cur, err := t.active(ctx)
	if err != nil {
		return err
	}
	if err := t.agent.sched.Interrupt(ctx, t.id, cur); err != nil {
		return fmt.Errorf("rein: %w", err)
	}
	return nil
}

// active returns the id of the thread's running or paused turn.
func (t *Thread) active(ctx context.Context) (string, error) {
	if t.err != nil {
		return "", t.err
	}
	cur, ok, err := t.agent.sched.Active(ctx, t.id)
	if err != nil {
		return "", fmt.Errorf("rein: %w", err)
	}
	if !ok {
		return "", ErrNoTurn
	}
	return cur.ID, nil
}

// ended returns the outcome of turn id, whose record the scheduler
// returned with err; a pause the agent's Waiter answers goes on first. The
// error is the turn's (Outcome.Err).
func (t *Thread) ended(ctx context.Context, id string, rec session.Turn, err error) (*Outcome, error) {
	a := t.agent
	for {
		if err != nil {
			a.take(id)
			return nil, fmt.Errorf("rein: %w", err)
		}
		out := a.outcome(rec)
		if out.Status != StatusPaused {
			a.ask(t.id, nil)
		}
		if out.Status != StatusPaused || out.Pause == nil || a.o.Waiter == nil {
			return out, out.Err
		}
		ans, werr := a.o.Waiter.Wait(ctx, *out.Pause)
		if werr != nil {
			// Not answered: the turn stays paused, to be answered later.
			return out, nil
		}
		ans.TurnID = cmp.Or(ans.TurnID, rec.ID)
		ans.CallID = cmp.Or(ans.CallID, out.Pause.CallID)
		rec, err = a.sched.AnswerTurn(ctx, t.id, ans)
	}
}

// outcome returns how the turn of rec ended: the engine's outcome (its
// items, a paused turn's state, the error as the engine made it), with
// what the record says over it when the two differ (the store refused the
// end); from the record alone when the engine never ran the turn.
func (a *Agent) outcome(rec session.Turn) *Outcome {
	out := a.take(rec.ID)
	if out == nil {
		out = &loop.Outcome{
			TurnID: rec.ID, Status: rec.Status, StopReason: rec.StopReason, Answer: rec.Answer, Output: rec.Output,
			Rounds: rec.Rounds, SettlementRounds: rec.SettlementRounds, ToolSteps: rec.ToolSteps,
			Usage: rec.Usage, Cost: rec.Cost, Pause: rec.Pause,
		}
		if rec.Error != "" {
			out.Err = errors.New(rec.Error)
		}
		if len(rec.State) > 0 {
			st := new(loop.State)
			if json.Unmarshal(rec.State, st) == nil {
				out.State = st
			}
		}
	} else {
		// Not copied: take handed it over, and the scheduler was done
		// with it once the turn's end was recorded (Config.Outcome is
		// called before), so it is the caller's now.
		if rec.Status != out.Status {
			out.Status, out.StopReason, out.Pause, out.State = rec.Status, rec.StopReason, nil, nil
			out.Err = errors.New(rec.Error)
		}
	}
	out.ThreadID = rec.ThreadID
	return out
}
