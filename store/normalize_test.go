package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// cutTurn starts a turn and forgets it was started here, as if the process
// running it had died.
func cutTurn(t *testing.T, s *Store, thread string) string {
	t.Helper()
	tn, err := s.startTurn(context.Background(), thread, "")
	if err != nil {
		t.Fatal(err)
	}
	liveDel(tn.ID)
	return tn.ID
}

func TestNormalizeClosesACutTurn(t *testing.T) {
	tests := []struct {
		name string
		// items the turn committed before it was cut
		items func(turn string) []llm.Item
		// steered input accepted and not read
		steer bool
		// wantAborted are the calls answered by normalization
		wantAborted []string
	}{
		{
			name:  "before the model answered",
			items: func(tn string) []llm.Item { return []llm.Item{user(tn, tn+".1", "go")} },
		},
		{
			name: "mid-tool, one of two results in",
			items: func(tn string) []llm.Item {
				return []llm.Item{
					user(tn, tn+".1", "go"),
					assistant(tn, tn+".2", "looking", call(tn+"_a"), call(tn+"_b")),
					result(tn, tn+".3", tn+"_a", "a done", llm.ResultOK),
				}
			},
			wantAborted: []string{"_b"},
		},
		{
			name: "after a resumed pause, its placeholder unanswered",
			items: func(tn string) []llm.Item {
				return []llm.Item{
					user(tn, tn+".1", "go"),
					assistant(tn, tn+".2", "", call(tn+"_q")),
					result(tn, tn+".3", tn+"_q", "[awaiting user reply]", llm.ResultPending),
				}
			},
			wantAborted: []string{"_q"},
		},
		{
			name: "with steered input not yet read",
			items: func(tn string) []llm.Item {
				return []llm.Item{user(tn, tn+".1", "go"), assistant(tn, tn+".2", "", call(tn+"_c"))}
			},
			steer:       true,
			wantAborted: []string{"_c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTemp(t)
			id := newThread(t, s)
			// An earlier, finished turn stays as it was.
			done, _ := s.startTurn(ctx, id, "")
			recordItems(t, s, id, user(done.ID, done.ID+".1", "first"), assistant(done.ID, done.ID+".2", "ok"))
			if err := s.finishOutcome(ctx, &loop.Outcome{TurnID: done.ID, Status: loop.StatusCompleted, StopReason: loop.StopFinished}); err != nil {
				t.Fatal(err)
			}
			tn := cutTurn(t, s, id)
			recordItems(t, s, id, tt.items(tn)...)
			var steered llm.Item
			if tt.steer {
				var err error
				if steered, err = s.AddSteer(ctx, tn, llm.UserText("also check the tests")); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := s.Items(ctx, id)

			snap, err := s.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := llm.CheckHistory(snap.Items); err != nil {
				t.Fatalf("history after normalization: %v", err)
			}
			// Nothing committed is lost or changed, but placeholders.
			for i, it := range before {
				if res := it.Result(); res != nil && res.Status == llm.ResultPending {
					continue
				}
				if !reflect.DeepEqual(snap.Items[i], it) {
					t.Fatalf("item %d changed: %+v, was %+v", i, snap.Items[i], it)
				}
			}
			var aborted []string
			for _, it := range snap.Items {
				if res := it.Result(); res != nil && res.Status == llm.ResultAborted {
					if !strings.HasPrefix(res.Content, "aborted: rein stopped before") {
						t.Errorf("aborted result says %q", res.Content)
					}
					aborted = append(aborted, strings.TrimPrefix(res.CallID, tn))
				}
			}
			if !reflect.DeepEqual(aborted, tt.wantAborted) {
				t.Fatalf("aborted calls %v, want %v", aborted, tt.wantAborted)
			}
			n := len(snap.Items)
			last := snap.Items[n-1]
			if last.Role != llm.RoleUser || last.Origin != llm.OriginMarker || !strings.Contains(last.Text(), "cut off") {
				t.Fatalf("last item %+v, want the interruption marker", last)
			}
			if tt.steer {
				if got := snap.Items[n-2]; got.ID != steered.ID || got.Origin != llm.OriginSteer {
					t.Fatalf("item before the marker %+v, want the steered input %s", got, steered.ID)
				}
				if p, _ := s.PendingSteers(ctx, tn); len(p) != 0 {
					t.Fatalf("steers still pending: %+v", p)
				}
			}
			if got := snap.Last(); got.ID != tn || got.Status != loop.StatusInterrupted || got.Ended.IsZero() {
				t.Fatalf("cut turn = %+v, want it interrupted", got)
			}
			if snap.Turns[0].Status != loop.StatusCompleted {
				t.Fatalf("earlier turn = %+v, want it untouched", snap.Turns[0])
			}

			// Idempotent: opening again changes nothing.
			again, err := s.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again.Items, snap.Items) || !reflect.DeepEqual(again.Turns, snap.Turns) {
				t.Fatal("a second normalization changed the thread")
			}
			// The thread goes on.
			if _, err := s.startTurn(ctx, id, ""); err != nil {
				t.Fatalf("next turn after normalization: %v", err)
			}
		})
	}
}

func TestNormalizeLeavesLiveAndPausedTurnsAlone(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)

	// A turn of this process that is still running.
	mine := newThread(t, s)
	tm, _ := s.startTurn(ctx, mine, "")

	// A turn of another live process: the test binary's parent.
	other := newThread(t, s)
	to := cutTurn(t, s, other)
	host, _, _ := strings.Cut(owner, ":")
	if _, err := s.db.ExecContext(ctx, `UPDATE turns SET owner = ? WHERE id = ?`, host+":"+strconv.Itoa(os.Getppid()), to); err != nil {
		t.Fatal(err)
	}

	// A paused turn.
	paused := newThread(t, s)
	tp, _ := s.startTurn(ctx, paused, "")
	recordItems(t, s, paused, user(tp.ID, tp.ID+".1", "go"), assistant(tp.ID, tp.ID+".2", "", call("q")),
		result(tp.ID, tp.ID+".3", "q", "[awaiting]", llm.ResultPending))
	st := &loop.State{Version: 1, ThreadID: paused, TurnID: tp.ID, Pause: &loop.Pause{TurnID: tp.ID, CallID: "q", Tool: "ask_user"}}
	if err := s.finishOutcome(ctx, &loop.Outcome{TurnID: tp.ID, Status: loop.StatusPaused, StopReason: loop.StopAwaitingUser, State: st, Pause: st.Pause}); err != nil {
		t.Fatal(err)
	}

	// A turn of a process that has exited.
	dead := newThread(t, s)
	td := cutTurn(t, s, dead)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE turns SET owner = ? WHERE id = ?`, host+":"+strconv.Itoa(cmd.Process.Pid), td); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		thread string
		want   loop.Status
	}{{mine, StatusRunning}, {other, StatusRunning}, {paused, loop.StatusPaused}, {dead, loop.StatusInterrupted}} {
		snap, err := s.Load(ctx, tt.thread)
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Last().Status; got != tt.want {
			t.Errorf("thread %s: turn %s, want %s", tt.thread, got, tt.want)
		}
	}
	if _, err := s.startTurn(ctx, paused, ""); !errors.Is(err, ErrPaused) {
		t.Fatalf("starting a turn on a paused thread: %v, want ErrPaused", err)
	}
	_ = tm
}
