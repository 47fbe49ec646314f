package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestQueuedTurnsRunInOrder(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, gateTool("work", started, release))
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "work"}}},
		{Text: "one"},
		{Text: "two", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Equals: "second"}}}},
		{Text: "three", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Equals: "third"}}}},
	}})
	first := h.start(th, "first")
	<-started
	second, third := h.start(th, "second"), h.start(th, "third")
	if first.Status != session.TurnInProgress || second.Status != session.TurnQueued || third.Status != session.TurnQueued {
		t.Fatalf("statuses %s %s %s, want inProgress queued queued", first.Status, second.Status, third.Status)
	}
	close(release)
	for _, c := range []struct {
		id, answer string
	}{{first.ID, "one"}, {second.ID, "two"}, {third.ID, "three"}} {
		if got := h.wait(th, c.id); got.Status != session.TurnCompleted || got.Answer != c.answer {
			t.Errorf("turn %s: %s %q, want completed %q", c.id, got.Status, got.Answer, c.answer)
		}
	}
	verify(t, m)
}

func TestInterruptingAQueuedTurnDropsIt(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, gateTool("work", started, release))
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "work"}}},
		{Text: "one"},
		{Text: "three", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Equals: "third"}}}},
	}})
	first := h.start(th, "first")
	<-started
	second, third := h.start(th, "second"), h.start(th, "third")
	if err := h.s.Interrupt(t.Context(), th, second.ID); err != nil {
		t.Fatal(err)
	}
	close(release)
	h.wait(th, first.ID)
	if got := h.wait(th, second.ID); got.Status != session.TurnInterrupted {
		t.Errorf("the dropped turn is %s", got.Status)
	}
	if got := h.wait(th, third.ID); got.Answer != "three" {
		t.Errorf("third turn %+v", got)
	}
	verify(t, m)
}

func TestTwoThreadsRunAtOnce(t *testing.T) {
	// Each tool call waits until both threads' calls run: the test only
	// passes when the two turns overlap.
	var both sync.WaitGroup
	both.Add(2)
	meet := &fakeTool{spec: tool.Spec{Name: "meet", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		both.Done()
		done := make(chan struct{})
		go func() { both.Wait(); close(done) }()
		select {
		case <-done:
			return tool.Output{Text: "met in " + c.ThreadID}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		case <-time.After(5 * time.Second):
			return tool.Output{Text: "alone"}, nil
		}
	}}
	h := newHarness(t, meet)
	script := func(answer string) scripted.Script {
		return scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{{Name: "meet"}}},
			{Text: answer, Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Tool: "meet", Contains: "met in"}}}},
		}}
	}
	a, ma := h.thread(script("answer A"))
	b, mb := h.thread(script("answer B"))
	ta, tb := h.start(a, "question A"), h.start(b, "question B")
	ga, gb := h.wait(a, ta.ID), h.wait(b, tb.ID)
	if ga.Answer != "answer A" || gb.Answer != "answer B" {
		t.Fatalf("answers %q %q", ga.Answer, gb.Answer)
	}
	verify(t, ma)
	verify(t, mb)
	for _, c := range []struct{ thread, own, other string }{{a, "question A", "question B"}, {b, "question B", "question A"}} {
		var all string
		for _, it := range h.items(c.thread) {
			all += it.Text() + "|"
			if r := it.Result(); r != nil {
				all += r.Content + "|"
			}
		}
		if !strings.Contains(all, c.own) || strings.Contains(all, c.other) || !strings.Contains(all, "met in "+c.thread) {
			t.Errorf("thread %s holds %q", c.thread, all)
		}
	}
}

func TestInterruptDuringALongTool(t *testing.T) {
	started := make(chan struct{}, 1)
	h := newHarness(t, slowTool(started))
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Text: "running", Calls: []scripted.Call{{ID: "s1", Name: "slow"}}},
		{Text: "checked", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "again"}}}},
	}})
	tu := h.start(th, "go")
	<-started
	asked := time.Now()
	if err := h.s.Interrupt(t.Context(), th, tu.ID); err != nil {
		t.Fatal(err)
	}
	got := h.wait(th, tu.ID)
	if took, limit := time.Since(asked), 200*time.Millisecond+h.grace; took > limit {
		t.Errorf("the interrupt took %s, want at most %s", took, limit)
	}
	if got.Status != session.TurnInterrupted || got.StopReason != loop.StopCancelled {
		t.Fatalf("turn %s/%s, want interrupted/cancelled", got.Status, got.StopReason)
	}
	items := h.items(th)
	var aborted *llm.Result
	for i := range items {
		if r := items[i].Result(); r != nil && r.CallID == "s1" {
			aborted = r
		}
	}
	if aborted == nil || aborted.Status != llm.ResultAborted || !strings.Contains(aborted.Content, "line 2") {
		t.Fatalf("aborted result %+v, want status aborted with the partial output", aborted)
	}
	if last := items[len(items)-1]; last.Origin != llm.OriginMarker || !strings.Contains(last.Text(), "interrupted") {
		t.Errorf("last item %s, want the interruption marker", describe(items[len(items)-1:]))
	}
	if err := llm.CheckHistory(items); err != nil {
		t.Errorf("the stored history: %v", err)
	}
	// The next turn's request passes the invariant check (the scripted
	// model checks every request) and carries the marker.
	next := h.wait(th, h.start(th, "again").ID)
	if next.Answer != "checked" {
		t.Fatalf("next turn %+v", next)
	}
	verify(t, m)
	if reqs := m.Requests(); !strings.Contains(describe(reqs[len(reqs)-1].Items), "user/marker") {
		t.Errorf("the next turn's request lacks the marker: %s", describe(reqs[len(reqs)-1].Items))
	}
}

func TestAnswerContinuesThePausedTurn(t *testing.T) {
	h := newHarness(t, askTool())
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}},
		{Text: "Paris it is", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "Paris"}}}},
	}})
	tu := h.start(th, "plan a trip")
	got := h.wait(th, tu.ID)
	if got.Status != session.TurnPaused || got.Pause == nil || got.Pause.CallID != "a1" {
		t.Fatalf("turn %+v, want paused on a1", got)
	}
	if _, err := h.s.Start(t.Context(), th, llm.UserText("another")); !errors.Is(err, session.ErrTurnPaused) {
		t.Errorf("start while paused: %v, want ErrTurnPaused", err)
	}
	if _, err := h.s.Steer(t.Context(), th, tu.ID, llm.UserText("more")); !errors.Is(err, session.ErrTurnPaused) {
		t.Errorf("steer while paused: %v, want ErrTurnPaused", err)
	}
	var mm *loop.PauseMismatchError
	if err := h.s.Answer(t.Context(), th, loop.Answer{TurnID: tu.ID, CallID: "zz", Text: "x"}); !errors.As(err, &mm) {
		t.Errorf("answer for another call: %v, want a PauseMismatchError", err)
	}
	sub, err := h.s.Subscribe(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := h.s.Answer(t.Context(), th, loop.Answer{TurnID: tu.ID, CallID: "a1", Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "Paris"}}}); err != nil {
		t.Fatal(err)
	}
	got = h.wait(th, tu.ID)
	if got.Status != session.TurnCompleted || got.Answer != "Paris it is" || got.ID != tu.ID {
		t.Fatalf("turn %+v, want the same turn completed", got)
	}
	if err := h.s.Answer(t.Context(), th, loop.Answer{TurnID: tu.ID, CallID: "a1", Text: "again"}); !errors.Is(err, loop.ErrNotPaused) {
		t.Errorf("second answer: %v, want ErrNotPaused", err)
	}
	verify(t, m)
	if err := llm.CheckHistory(h.items(th)); err != nil {
		t.Error(err)
	}
	var resolved bool
	for _, e := range nextUntil(t, sub, event.TurnCompleted) {
		resolved = resolved || e.Type == event.PauseResolved
	}
	if !resolved {
		t.Error("no pause_resolved event for subscribers")
	}
}

func TestInterruptingAPausedTurn(t *testing.T) {
	h := newHarness(t, askTool())
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}},
		{Text: "fresh start", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "never mind"}}}},
	}})
	tu := h.start(th, "plan a trip")
	h.wait(th, tu.ID)
	if err := h.s.Interrupt(t.Context(), th, tu.ID); err != nil {
		t.Fatal(err)
	}
	if got := h.wait(th, tu.ID); got.Status != session.TurnInterrupted {
		t.Fatalf("turn %s, want interrupted", got.Status)
	}
	items := h.items(th)
	if err := llm.CheckHistory(items); err != nil {
		t.Fatal(err)
	}
	if r := items[len(items)-2].Result(); r == nil || r.Status != llm.ResultAborted {
		t.Errorf("items %s: want the placeholder answered as aborted", describe(items))
	}
	if items[len(items)-1].Origin != llm.OriginMarker {
		t.Errorf("items %s: want the marker last", describe(items))
	}
	if got := h.wait(th, h.start(th, "never mind").ID); got.Answer != "fresh start" {
		t.Errorf("next turn %+v", got)
	}
	verify(t, m)
}

func TestSubscribers(t *testing.T) {
	h := newHarness(t)
	th, _ := h.thread(scripted.Script{Rounds: []scripted.Round{{Text: strings.Repeat("word ", 200), Chunk: 5, Delay: time.Millisecond}, {Text: "more"}}})
	fast1, _ := h.s.Subscribe(t.Context(), th)
	fast2, _ := h.s.Subscribe(t.Context(), th)
	slow, _ := h.s.Subscribe(t.Context(), th) // never read during the turn
	defer fast1.Close()
	defer fast2.Close()
	defer slow.Close()

	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, sub := range []*session.Subscription{fast1, fast2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for {
				evs, err := sub.Next(ctx)
				if err != nil {
					t.Errorf("subscriber %d: no turn_completed after %d events (dropped %d): %v", i, counts[i], sub.Dropped(), err)
					return
				}
				for _, e := range evs {
					counts[i]++
					if e.Type == event.TurnCompleted {
						return
					}
				}
			}
		}()
	}
	tu := h.start(th, "talk")
	if got := h.wait(th, tu.ID); got.Status != session.TurnCompleted {
		t.Fatalf("turn %s", got.Status)
	}
	wg.Wait()
	if counts[0] < 200 || counts[0] != counts[1] {
		t.Errorf("fast subscribers saw %d and %d events, want the same, over 200", counts[0], counts[1])
	}
	if slow.Dropped() == 0 {
		t.Fatal("the slow subscriber lost nothing, yet its buffer is 64")
	}
	// Once it reads, the next event that fits is preceded by a warning
	// that says how many were lost.
	if _, err := slow.Poll(); err != nil || slow.Pending() != 0 {
		t.Fatalf("poll: %v, %d events left", err, slow.Pending())
	}
	h.wait(th, h.start(th, "more").ID)
	evs, err := slow.Poll()
	if err != nil || len(evs) == 0 {
		t.Fatalf("poll after the next turn: %d events, %v", len(evs), err)
	}
	e := evs[0]
	if e.Type != event.Warning || e.Code != session.WarnEventsDropped || e.Extra["dropped"] != int(slow.Dropped()) {
		t.Errorf("first event after the gap %+v, want the drop warning for %d events", e, slow.Dropped())
	}
}

// nextUntil reads sub until an event of type last, and returns what it read.
func nextUntil(t *testing.T, sub *session.Subscription, last event.Type) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []event.Event
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no %s event after %d events (%v): %v", last, len(got), types(got), err)
		}
		for _, e := range evs {
			got = append(got, e)
			if e.Type == last {
				return got
			}
		}
	}
}

// TestSubscribersSeeTheEndOnceRecorded: a client acting on the event that
// ends a run finds the thread in the state the event announces: after
// turn_completed no turn is active (a steer is refused, not taken into a
// turn that has stopped reading), after pause_requested the turn takes its
// answer.
func TestSubscribersSeeTheEndOnceRecorded(t *testing.T) {
	const turns = 30
	tests := []struct {
		name  string
		round func(i int) scripted.Round
		last  event.Type // read up to
		act   func(h *harness, th, turn string, i int) error
		want  error
	}{
		{
			name: "no active turn after turn_completed", last: event.TurnCompleted,
			round: func(int) scripted.Round { return scripted.Round{Text: "done"} },
			act: func(h *harness, th, turn string, _ int) error {
				_, err := h.s.Steer(h.t.Context(), th, turn, llm.UserText("late"))
				return err
			},
			want: session.ErrNoActiveTurn,
		},
		{
			name: "the turn takes an answer after pause_requested", last: event.PauseRequested,
			round: func(i int) scripted.Round {
				return scripted.Round{Calls: []scripted.Call{{ID: fmt.Sprintf("a%d", i), Name: "ask_user"}}}
			},
			act: func(h *harness, th, turn string, i int) error {
				err := h.s.Answer(h.t.Context(), th, loop.Answer{TurnID: turn, CallID: fmt.Sprintf("a%d", i), Text: "yes"})
				if err == nil {
					h.wait(th, turn)
				}
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, askTool())
			var rounds []scripted.Round
			for i := range turns {
				rounds = append(rounds, tt.round(i))
				if tt.last == event.PauseRequested {
					rounds = append(rounds, scripted.Round{Text: "thanks"})
				}
			}
			th, _ := h.thread(scripted.Script{Rounds: rounds})
			sub, err := h.s.Subscribe(t.Context(), th)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			for i := range turns {
				tu := h.start(th, "go")
				nextUntil(t, sub, tt.last)
				if err := tt.act(h, th, tu.ID, i); !errors.Is(err, tt.want) {
					t.Fatalf("turn %d: %v, want %v", i+1, err, tt.want)
				}
				h.wait(th, tu.ID)
			}
		})
	}
}

func types(evs []event.Event) []event.Type {
	var out []event.Type
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}
