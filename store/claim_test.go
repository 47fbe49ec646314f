package store

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
)

// asOtherProcess hands a running turn to another live process, the test
// binary's parent, as that process would store it.
func asOtherProcess(t *testing.T, s *Store, turnID string) Owner {
	t.Helper()
	ppid := os.Getppid()
	token, ok := processToken(ppid)
	if !ok {
		token = "rtoken"
	}
	me, _ := parseOwner(owner)
	who := me.Host + ":" + strconv.Itoa(ppid) + ":" + token
	if _, err := s.db.ExecContext(context.Background(), `UPDATE turns SET owner = ? WHERE id = ?`, who, turnID); err != nil {
		t.Fatal(err)
	}
	liveDel(turnID)
	o, _ := parseOwner(who)
	return o
}

// Every path that makes a turn running — StartTurn (rein run), SaveTurn
// and ClaimTurn (the scheduler of chat and serve) — is refused while
// another live process runs a turn of the thread, with an error naming
// the running turn and its process.
func TestClaimRefusesWhileAnotherProcessRuns(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		claim func(s *Store, thread string) error
	}{
		{"StartTurn", func(s *Store, thread string) error { _, err := s.startTurn(ctx, thread, ""); return err }},
		{"SaveTurn running", func(s *Store, thread string) error {
			return s.SaveTurn(ctx, record.Turn{ID: loop.NewID("turn"), ThreadID: thread, Status: StatusRunning})
		}},
		{"ClaimTurn", func(s *Store, thread string) error {
			_, err := s.ClaimTurn(ctx, record.Turn{ID: loop.NewID("turn"), ThreadID: thread})
			return err
		}},
		{"ClaimTurn of a queued turn", func(s *Store, thread string) error {
			id := loop.NewID("turn")
			if err := s.SaveTurn(ctx, record.Turn{ID: id, ThreadID: thread, Status: StatusQueued, Input: []llm.Item{llm.UserText("next")}}); err != nil {
				t.Fatal(err)
			}
			_, err := s.ClaimTurn(ctx, record.Turn{ID: id, ThreadID: thread})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			thread := newThread(t, s)
			running, err := s.startTurn(ctx, thread, "")
			if err != nil {
				t.Fatal(err)
			}
			o := asOtherProcess(t, s, running.ID)
			err = tt.claim(s, thread)
			var busy *TurnActiveError
			if !errors.As(err, &busy) || !errors.Is(err, ErrTurnActive) {
				t.Fatalf("claim while another process runs turn %s: %v, want a *TurnActiveError", running.ID, err)
			}
			if busy.TurnID != running.ID || busy.Owner.PID != o.PID {
				t.Errorf("error names turn %s of pid %d, want turn %s of pid %d", busy.TurnID, busy.Owner.PID, running.ID, o.PID)
			}
			for _, want := range []string{running.ID, "process " + strconv.Itoa(o.PID)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			turns, err := s.Turns(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, tn := range turns {
				if tn.Status == StatusRunning {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d running turns on the thread, want 1: %+v", n, turns)
			}
		})
	}
}

// A turn running in another process is never overwritten by a process
// that thinks it is queued (its memory of the thread is stale).
func TestSaveTurnDoesNotOverwriteAnotherProcesssTurn(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	thread := newThread(t, s)
	running, err := s.startTurn(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	asOtherProcess(t, s, running.ID)
	err = s.SaveTurn(ctx, record.Turn{ID: running.ID, ThreadID: thread, Status: loop.StatusInterrupted, StopReason: loop.StopCancelled})
	if !errors.Is(err, ErrTurnActive) {
		t.Fatalf("SaveTurn over another process's running turn: %v, want ErrTurnActive", err)
	}
	snap, err := s.Load(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Last().Status; got != StatusRunning {
		t.Errorf("the other process's turn is %s, want still running", got)
	}
}

// A pid taken by a later process does not keep a dead owner's turn alive:
// the start token tells them apart.
func TestClaimRecoversATurnWhosePidWasReused(t *testing.T) {
	if _, ok := processToken(os.Getpid()); !ok {
		t.Skip("no process start time here: owners are told apart by pid only")
	}
	ctx := context.Background()
	s := openTemp(t)
	thread := newThread(t, s)
	old := cutTurn(t, s, thread)
	me, _ := parseOwner(owner)
	// The parent is alive, but it is not the process that started the turn.
	who := me.Host + ":" + strconv.Itoa(os.Getppid()) + ":t1"
	if _, err := s.db.ExecContext(ctx, `UPDATE turns SET owner = ? WHERE id = ?`, who, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.startTurn(ctx, thread, ""); err != nil {
		t.Fatalf("start after the owner's pid was reused: %v", err)
	}
	turns, _ := s.Turns(ctx, thread)
	if turns[0].Status != loop.StatusInterrupted {
		t.Errorf("the dead owner's turn is %s, want interrupted", turns[0].Status)
	}
}

// A turn that ended is never claimed again, and a claim of a paused turn
// (resuming it) keeps its state until it ends.
func TestClaimTurnStates(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	thread := newThread(t, s)
	tn, err := s.startTurn(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.finishOutcome(ctx, finished(tn.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimTurn(ctx, record.Turn{ID: tn.ID, ThreadID: thread}); !errors.Is(err, ErrTurnEnded) {
		t.Fatalf("claiming an ended turn: %v, want ErrTurnEnded", err)
	}
	tp, err := s.startTurn(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	recordItems(t, s, thread, user(tp.ID, tp.ID+".1", "go"), assistant(tp.ID, tp.ID+".2", "", call("q")),
		result(tp.ID, tp.ID+".3", "q", "[awaiting]", llm.ResultPending))
	st := &loop.State{Version: 1, ThreadID: thread, TurnID: tp.ID, Pause: &loop.Pause{TurnID: tp.ID, CallID: "q", Tool: "ask_user"}}
	if err := s.savePauseState(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimTurn(ctx, record.Turn{ID: loop.NewID("turn"), ThreadID: thread}); !errors.Is(err, ErrPaused) {
		t.Fatalf("claiming a new turn past a paused one: %v, want ErrPaused", err)
	}
	c, err := s.ClaimTurn(ctx, record.Turn{ID: tp.ID, ThreadID: thread})
	if err != nil {
		t.Fatalf("claiming the paused turn to resume it: %v", err)
	}
	if c.Items != 3 || c.Seq != 2 {
		t.Errorf("claim = %+v, want seq 2 and 3 items", c)
	}
	var kept bool
	if err := s.db.QueryRowContext(ctx, `SELECT state IS NOT NULL FROM turns WHERE id = ?`, tp.ID).Scan(&kept); err != nil || !kept {
		t.Errorf("the resumed turn's state was dropped before it ended (err %v)", err)
	}
}
