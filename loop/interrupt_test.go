package loop_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// slowTool writes partial output, then waits for cancellation.
func slowTool(started chan<- struct{}) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "slow", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		io.WriteString(c.Partial, "line 1\nline 2\n")
		close(started)
		<-ctx.Done()
		return tool.Output{}, ctx.Err()
	}}
}

func TestInterruptDuringATool(t *testing.T) {
	started := make(chan struct{})
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Text: "running", Calls: []scripted.Call{{ID: "s1", Name: "slow"}}},
		{Text: "next turn", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "interrupted"}}}},
	}}, scripted.RecordRequests())
	e, _ := loop.New(loop.Options{Model: m, Tools: tool.NewSet(slowTool(started)), Grace: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	go func() {
		<-started
		cancelled = time.Now()
		cancel()
	}()
	out, err := e.Run(ctx, loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	took := time.Since(cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != loop.StatusInterrupted || out.StopReason != loop.StopCancelled {
		t.Fatalf("got %s/%s", out.Status, out.StopReason)
	}
	if took > 200*time.Millisecond+100*time.Millisecond {
		t.Errorf("interrupt took %s", took)
	}
	var aborted *llm.Result
	for i := range out.Items {
		if r := out.Items[i].Result(); r != nil && r.CallID == "s1" {
			aborted = r
		}
	}
	if aborted == nil || aborted.Status != llm.ResultAborted || !strings.Contains(aborted.Content, "line 2") {
		t.Fatalf("aborted result %+v", aborted)
	}
	last := out.Items[len(out.Items)-1]
	if last.Origin != llm.OriginMarker || !strings.Contains(last.Text(), "interrupted") {
		t.Errorf("last item %+v, want the interruption marker", last)
	}
	if err := llm.CheckHistory(out.Items); err != nil {
		t.Errorf("history after interrupt: %v", err)
	}

	// The next turn sees the marker and passes the invariant check.
	out2, err := e.Run(context.Background(), loop.Turn{ThreadID: "th", History: out.Items, Input: []llm.Item{llm.UserText("again")}})
	if err != nil || out2.Answer != "next turn" {
		t.Fatalf("next turn: %v %q", err, out2.Answer)
	}
	mustVerify(t, m)
	checkInvariants(t, m)
}

func TestInterruptDuringTheStream(t *testing.T) {
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "a long answer that streams slowly", Chunk: 2, Delay: 5 * time.Millisecond}}})
	e, _ := loop.New(loop.Options{Model: m})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	out, err := e.Run(ctx, loop.Turn{Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != loop.StatusInterrupted {
		t.Fatalf("status %s", out.Status)
	}
	if out.Items[1].Role != llm.RoleAssistant || out.Items[1].Text() == "" {
		t.Errorf("partial text not kept: %+v", out.Items[1])
	}
	// The model was called and answered in part: the round counts.
	if out.Rounds != 1 {
		t.Errorf("rounds %d, want 1: the interrupted round was a model call", out.Rounds)
	}
}

// inbox is a steer inbox for tests.
type inbox struct {
	mu    sync.Mutex
	items []llm.Item
}

func (b *inbox) put(text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, llm.UserText(text))
}

func (b *inbox) Drain() []llm.Item {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.items
	b.items = nil
	return out
}

func TestSteer(t *testing.T) {
	t.Run("delivered after the round's results, before the next request", func(t *testing.T) {
		box := &inbox{}
		steerer := &fakeTool{spec: tool.Spec{Name: "work", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
			box.put("use metric units")
			return tool.Output{Text: "did work"}, nil
		}}
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
			{Text: "done in metric", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "use metric units"}}}},
		}}, loop.Options{Tools: tool.NewSet(steerer), Steer: box}, "q")
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m)
		// Order: assistant(call) → result → steer.
		n := len(out.Items)
		if out.Items[n-3].Result() == nil || out.Items[n-2].Origin != llm.OriginSteer {
			t.Errorf("order wrong: %+v", out.Items)
		}
	})
	t.Run("at the finish boundary the turn goes on", func(t *testing.T) {
		box := &inbox{}
		m := scripted.New(scripted.Script{Rounds: []scripted.Round{
			{Text: "first answer"},
			{Text: "second answer", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "also Paris"}}}},
		}})
		ev := &events{}
		e, _ := loop.New(loop.Options{Model: m, Steer: box, Events: handlerFunc(func(t string) {
			if t == "round_started" && len(ev.of("round_started")) == 1 {
				box.put("also Paris")
			}
		}, ev)})
		out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("q")}})
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m)
		if out.Answer != "second answer" || out.Rounds != 2 {
			t.Errorf("answer %q rounds %d", out.Answer, out.Rounds)
		}
	})
}

// sameIDs is a model that, like some compatible servers, numbers calls per
// response: every round's first call is "call_0".
type sameIDs struct{ llm.Model }

func (m sameIDs) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	s, err := m.Model.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return sameIDStream{s}, nil
}

type sameIDStream struct{ llm.Stream }

func (s sameIDStream) Recv() (llm.Event, error) {
	ev, err := s.Stream.Recv()
	if ev.Call != nil {
		c := *ev.Call
		c.ID = fmt.Sprintf("call_%d", ev.Index)
		ev.Call = &c
	}
	if ev.Response != nil {
		r := *ev.Response
		r.Parts = slices.Clone(r.Parts)
		n := 0
		for i := range r.Parts {
			if r.Parts[i].Call != nil {
				c := *r.Parts[i].Call
				c.ID = fmt.Sprintf("call_%d", n)
				n++
				r.Parts[i].Call = &c
			}
		}
		ev.Response = &r
	}
	return ev, err
}

func TestCallIDsStayUniqueAcrossRounds(t *testing.T) {
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("counter", nil)}},
		{Calls: []scripted.Call{call("counter", nil)}},
		{Text: "ok"},
	}}, scripted.RecordRequests())
	e, _ := loop.New(loop.Options{Model: sameIDs{m}, Tools: tool.NewSet(counterTool("counter"))})
	out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("q")}})
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	checkInvariants(t, m)
	if err := llm.CheckHistory(out.Items); err != nil {
		t.Error(err)
	}
}

func TestTooManyCallsAreAnswered(t *testing.T) {
	var calls []scripted.Call
	for i := range 10 {
		calls = append(calls, call("counter", map[string]any{"i": i}))
	}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{{Calls: calls}, {Text: "ok"}}},
		loop.Options{Tools: tool.NewSet(counterTool("counter"))}, "q")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	ran, notRun := 0, 0
	for _, it := range out.Items {
		if r := it.Result(); r != nil {
			switch r.Status {
			case llm.ResultOK:
				ran++
			case llm.ResultNotRun:
				notRun++
			}
		}
	}
	if ran != 8 || notRun != 2 {
		t.Errorf("ran %d, not run %d; want 8 and 2", ran, notRun)
	}
}

func TestDirectivesAreLeftOutOfLaterTurns(t *testing.T) {
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("counter", nil)}},
		{Text: "one"},
		{Text: "two", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Equals: "second"}}}},
	}}, scripted.RecordRequests())
	e, _ := loop.New(loop.Options{Model: m, MaxRounds: 1, Tools: tool.NewSet(counterTool("counter"))})
	out, err := e.Run(t.Context(), loop.Turn{Input: []llm.Item{llm.UserText("first")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(t.Context(), loop.Turn{History: out.Items, Input: []llm.Item{llm.UserText("second")}}); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	reqs := m.Requests()
	for _, it := range reqs[2].Items {
		if it.Origin == llm.OriginDirective {
			t.Errorf("a directive of the first turn was sent in the second: %q", it.Text())
		}
	}
	// Calls and results of the first turn are kept (full item history).
	if err := llm.CheckHistory(reqs[2].Items); err != nil || len(reqs[2].Items) != 5 {
		t.Errorf("second turn context: %d items, %v", len(reqs[2].Items), err)
	}
}

func TestEarlyStartFinishesBeforeTheStreamEnds(t *testing.T) {
	var end time.Time
	quick := &fakeTool{spec: tool.Spec{Name: "quick", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		time.Sleep(10 * time.Millisecond)
		end = time.Now()
		return tool.Output{Text: "ok"}, nil
	}}
	ev := &events{}
	_, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("quick", nil)}, Hold: 300 * time.Millisecond},
		{Text: "done"},
	}}, loop.Options{Tools: tool.NewSet(quick), Events: ev}, "q")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	var roundEnd time.Time
	for _, e := range ev.of("round_completed") {
		roundEnd = e.Time
		break
	}
	if end.IsZero() || !end.Before(roundEnd.Add(-200*time.Millisecond)) {
		t.Errorf("tool finished at %s, round ended at %s: not started early", end.Format(time.StampMicro), roundEnd.Format(time.StampMicro))
	}
}
