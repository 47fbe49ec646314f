package loop_test

import (
	"encoding/json"
	"runtime"
	"slices"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// TestATurnHoldsTheCallersHistoryApartOnlyForThoseWhoReadIt: the engine
// sends the caller's history as the request's History (its array, not a
// copy) only when the model and the window guard read it; either way the
// request sends the thread's context, then the turn's items.
func TestATurnHoldsTheCallersHistoryApartOnlyForThoseWhoReadIt(t *testing.T) {
	directive := llm.Directive("an earlier turn's directive")
	directive.ID = "t1.9"
	compaction := llm.UserText("summary")
	compaction.ID, compaction.Origin = "t1.10", loop.OriginCompaction
	long := threadWith(200)
	tests := []struct {
		name    string
		history []llm.Item
		reads   bool
		window  loop.Window
		// apart is the index in history of the first item sent as the
		// request's History, -1 when nothing is.
		apart int
	}{
		{name: "a model that reads History", history: long, reads: true, apart: 0},
		{name: "a model that does not", history: long, apart: -1},
		{name: "a window guard that reads History", history: long, reads: true, window: readingWindow{}, apart: 0},
		{name: "a window guard that does not", history: long, reads: true, window: nopWindow{}, apart: -1},
		{name: "a compaction: from it on", history: append(slices.Clone(long[:5]), compaction, llm.UserText("after")), reads: true, apart: 5},
		{name: "a directive: the items before it", history: append(slices.Clone(long[:5]), directive, llm.UserText("after")), reads: true, apart: 0},
		{name: "an empty thread", history: nil, reads: true, apart: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &repeatModel{calls: 1, reads: tt.reads}
			e, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter")), Window: tt.window})
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Run(t.Context(), loop.Turn{History: tt.history, Input: []llm.Item{llm.UserText("go")}})
			if err != nil {
				t.Fatal(err)
			}
			m.check(t)
			sent, first := m.lastRequest()
			want := append(loop.ContextOf(tt.history), out.Items[:len(out.Items)-1]...)
			sameItems(t, sent, want)
			if tt.apart >= 0 && first != &tt.history[tt.apart] {
				t.Errorf("the request's first item is not the caller's item %d: the history was copied", tt.apart)
			}
			if tt.apart < 0 && len(tt.history) > 0 && first == &tt.history[0] {
				t.Error("the request's first item is the caller's: its history was handed to a reader that does not read History")
			}
		})
	}
}

// TestATurnOnALongThreadCopiesNothingOfIt: a one-round turn on a thread of
// 1,000 rounds given only its History allocates about what it does on an
// empty thread, not a copy of the thread's 2,001 items.
func TestATurnOnALongThreadCopiesNothingOfIt(t *testing.T) {
	e, err := loop.New(loop.Options{Model: scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "ok", Repeat: 1000}}}, scripted.NoHistoryCheck())})
	if err != nil {
		t.Fatal(err)
	}
	h := threadWith(1000)
	turn := func() uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("go")}}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	least := turn()
	for range 4 {
		least = min(least, turn())
	}
	// A copy of the context is len(h) items of 64 bytes.
	if limit := uint64(len(h)) * 64 / 8; least > limit {
		t.Errorf("a turn allocated %d bytes, more than %d: the thread's history was copied", least, limit)
	}
}

// TestAPausedTurnHandsOutItsWholeContext: a turn that held the caller's
// history apart pauses with a State that holds it all (as it marshals for
// a store), and resumes from it, in another engine, sending the same
// context.
func TestAPausedTurnHandsOutItsWholeContext(t *testing.T) {
	script := scripted.Script{Rounds: []scripted.Round{
		askRound,
		{Text: "Shanghai is 40 C.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "ask1", Contains: "-> Shanghai"}}}},
	}}
	m := scripted.New(script, scripted.RecordRequests())
	tools := tool.NewSet(askTool(), textTool("weather", "40 C"))
	e1, err := loop.New(loop.Options{Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	h := threadWith(50)
	out, err := e1.Run(t.Context(), loop.Turn{ThreadID: "th1", History: h, Input: []llm.Item{llm.UserText("weather?")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != loop.StatusPaused || out.State == nil {
		t.Fatalf("got %s, state %v; the test needs a pause", out.Status, out.State)
	}
	if got, want := len(out.State.History), len(h)+len(out.Items); got != want || out.State.TurnStart != len(h) {
		t.Fatalf("the paused State holds %d items from turn start %d, want %d from %d", got, out.State.TurnStart, want, len(h))
	}
	sameItems(t, out.State.History, append(slices.Clone(h), out.Items...))
	if got := out.State.TurnItems(); len(got) != len(out.Items) {
		t.Errorf("the State's turn items are %d, want %d", len(got), len(out.Items))
	}
	blob, err := json.Marshal(out.State)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loop.ParseState(blob)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := loop.New(loop.Options{Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	out2, err := e2.Resume(t.Context(), st, loop.Answer{TurnID: out.Pause.TurnID, CallID: "ask1", Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "Shanghai"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out2.Status != loop.StatusCompleted {
		t.Fatalf("resumed: %s", out2.Status)
	}
	mustVerify(t, m)
	checkInvariants(t, m)
	reqs := m.Requests()
	last := reqs[len(reqs)-1].Items
	sameItems(t, last[:len(h)], h)
}

// readingShortenWindow is shortenWindow reading Request.History: its
// guard shortens an item of the caller's history.
type readingShortenWindow struct{ shortenWindow }

func (readingShortenWindow) ReadsHistory() bool { return true }

// TestAGuardShortensTheCallersItemsInACopy: a guard shortening an item
// the request holds in History (the caller's array) shortens it in the
// engine's own copy: the request sends it shortened, the caller's history
// and the next turn see it as recorded.
func TestAGuardShortensTheCallersItemsInACopy(t *testing.T) {
	m := &repeatModel{calls: 1, reads: true}
	e, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter")), Window: readingShortenWindow{}})
	if err != nil {
		t.Fatal(err)
	}
	h := threadWith(200)
	before := snapshot(t, h)
	out, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("one")}})
	if err != nil {
		t.Fatal(err)
	}
	m.check(t)
	if got := snapshot(t, h); got != before {
		t.Fatal("the guard's shortening wrote the caller's history")
	}
	sent, first := m.lastRequest()
	if got := sent[2].Result().Content; got != "[shortened]" {
		t.Errorf("the request sent item 2 as %q, want it shortened", got)
	}
	if first == &h[0] {
		t.Error("the request still sent the caller's array after an item of it was shortened")
	}
	want := append(slices.Clone(h), out.Items[:len(out.Items)-1]...)
	want[2] = sent[2]
	sameItems(t, sent, want)
	plain, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Run(t.Context(), loop.Turn{History: append(h, out.Items...), Input: []llm.Item{llm.UserText("two")}, Carry: out.Carry}); err != nil {
		t.Fatal(err)
	}
	if sent, _ := m.lastRequest(); sent[2].Result().Content != "ok" {
		t.Errorf("the next turn sent item 2 as %q, want it as recorded (ok)", sent[2].Result().Content)
	}
}
