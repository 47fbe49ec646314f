package loop_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// repeatModel numbers its calls per response, as some servers do: each
// round it calls counter with the id "call_0" until the turn holds calls
// results, then answers. It checks the history invariants of every request
// and keeps a copy of what it was sent.
type repeatModel struct {
	calls int
	// tool and args are what it calls; counter with {} when empty.
	tool, args string
	// reads: it reads Request.History (llm.HistoryReader), so the engine
	// holds the caller's history apart instead of copying it.
	reads bool

	mu    sync.Mutex
	reqs  [][]llm.Item // the items of each request, copied
	first []*llm.Item  // the address of each request's first item
	bad   []string
}

func (m *repeatModel) Stream(_ context.Context, req *llm.Request) (llm.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reads && len(req.History) > 0 {
		m.bad = append(m.bad, fmt.Sprintf("request %d: %d items in History, which the model does not read", len(m.reqs)+1, len(req.History)))
	}
	if err := llm.CheckRequest(req); err != nil {
		m.bad = append(m.bad, fmt.Sprintf("request %d: %v", len(m.reqs)+1, err))
	}
	m.reqs = append(m.reqs, slices.Clone(req.Joined()))
	var first *llm.Item
	if req.Len() > 0 {
		first = req.At(0)
	}
	m.first = append(m.first, first)
	results := 0
	for _, it := range req.All() {
		if it.TurnID == req.TurnID && it.Role == llm.RoleTool {
			results++
		}
	}
	if results < m.calls {
		c := &llm.Call{ID: "call_0", Name: cmp.Or(m.tool, "counter"), Args: cmp.Or(m.args, "{}")}
		return &turnStream{evs: []llm.Event{
			{Kind: llm.EventCallDone, Call: c},
			{Kind: llm.EventDone, Response: &llm.Response{Parts: []llm.Part{{Kind: llm.PartCall, Call: c}}, Finish: llm.FinishToolCalls}},
		}}, nil
	}
	return &turnStream{evs: []llm.Event{
		{Kind: llm.EventText, Delta: "done"},
		{Kind: llm.EventDone, Response: &answerResponse},
	}}, nil
}

func (m *repeatModel) ReadsHistory() bool { return m.reads }

func (m *repeatModel) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.bad {
		t.Error(b)
	}
}

// lastRequest returns the items and the first item's address of the latest
// request.
func (m *repeatModel) lastRequest() ([]llm.Item, *llm.Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1], m.first[len(m.first)-1]
}

// threadWith is a thread of n rounds whose calls reuse the ids call_0,
// call_1, … a server numbering calls per response would send again.
func threadWith(n int) []llm.Item {
	h := []llm.Item{{ID: "t0.0", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "start"}}}}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		h = append(h, llm.Item{ID: fmt.Sprintf("t0.%d", 2*i+1), Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "counter", Args: "{}"}}}})
		r := llm.ToolResult(llm.Result{CallID: id, Name: "counter", Content: "ok", Status: llm.ResultOK})
		r.ID = fmt.Sprintf("t0.%d", 2*i+2)
		h = append(h, r)
	}
	return h
}

// snapshot is the JSON of s[:cap(s)]: every item the slice's array holds,
// what they point to included.
func snapshot(t *testing.T, s []llm.Item) string {
	t.Helper()
	b, err := json.Marshal(s[:cap(s)])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameItems reports the first item where got and want differ.
func sameItems(t *testing.T, got, want []llm.Item) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = itemsJSON(t, got[i:i+1])
		}
		if i < len(want) {
			w = itemsJSON(t, want[i:i+1])
		}
		if g != w {
			t.Errorf("%d items sent, want %d; item %d is\n%s\nwant\n%s", len(got), len(want), i, g, w)
			return
		}
	}
}

func itemsJSON(t *testing.T, items []llm.Item) string {
	t.Helper()
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nopWindow is a context window that never acts.
type nopWindow struct{}

func (nopWindow) Guard() loop.Guard                     { return nopGuard{} }
func (nopWindow) Cap(res llm.Result) llm.Result         { return res }
func (nopGuard) Observe(llm.Usage) *event.ContextReport { return nil }
func (nopGuard) Fit(context.Context, guard.History, bool) error {
	return nil
}

type nopGuard struct{}

// readingWindow is nopWindow that reads Request.History.
type readingWindow struct{ nopWindow }

func (readingWindow) ReadsHistory() bool { return true }

func TestTurnsLeaveTheCallersHistoryAlone(t *testing.T) {
	// Every history has room beyond its length holding other items: a
	// turn writing there (or anywhere in the array) changes the snapshot.
	withRoom := func(h []llm.Item) []llm.Item {
		out := make([]llm.Item, len(h), len(h)+8)
		copy(out, h)
		for i := len(h); i < cap(out); i++ {
			out[:cap(out)][i] = llm.UserText(fmt.Sprintf("not the caller's history %d", i))
		}
		return out
	}
	directive := llm.Directive("an earlier turn's directive")
	directive.ID = "t1.9"
	compaction := llm.UserText("summary")
	compaction.ID, compaction.Origin = "t1.10", loop.OriginCompaction
	type test struct {
		name    string
		history []llm.Item
		carried bool // the second turn is given the first turn's Carry
		window  bool
		// reads: the model (and the window) read Request.History, so
		// the engine holds the caller's history apart.
		reads bool
	}
	// A long thread with an earlier turn's directive in its middle: the
	// context before it can be held apart, the rest is copied.
	directed := slices.Concat(threadWith(100), []llm.Item{directive}, threadWith(100)[1:])
	for i := 202; i < len(directed); i++ {
		directed[i].ID = fmt.Sprintf("t2.%d", i)
		for _, c := range directed[i].Calls() {
			c2 := *c
			c2.ID = "b" + c.ID
			directed[i].Parts = []llm.Part{{Kind: llm.PartCall, Call: &c2}}
		}
		if r := directed[i].Result(); r != nil {
			directed[i] = llm.ToolResult(llm.Result{CallID: "b" + r.CallID, Name: r.Name, Content: r.Content, Status: r.Status})
			directed[i].ID = fmt.Sprintf("t2.%d", i)
		}
	}
	var tests []test
	for _, reads := range []bool{false, true} {
		suffix := ""
		if reads {
			suffix = ", history read apart"
		}
		tests = append(tests,
			test{name: "empty thread" + suffix, history: withRoom(nil), reads: reads},
			test{name: "long thread" + suffix, history: withRoom(threadWith(200)), reads: reads},
			test{name: "thread with a directive and a compaction" + suffix, history: withRoom(append(threadWith(3), directive, compaction, llm.UserText("after the summary"))), reads: reads},
			test{name: "long thread, carried" + suffix, history: withRoom(threadWith(200)), carried: true, reads: reads},
			test{name: "long thread, carried, with a context window" + suffix, history: withRoom(threadWith(200)), carried: true, window: true, reads: reads},
			test{name: "long thread with a directive, carried" + suffix, history: withRoom(directed), carried: true, reads: reads},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &repeatModel{calls: 2, reads: tt.reads}
			o := loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter"))}
			if tt.window {
				o.Window = nopWindow{}
				if tt.reads {
					o.Window = readingWindow{}
				}
			}
			e, err := loop.New(o)
			if err != nil {
				t.Fatal(err)
			}
			h := tt.history
			before := snapshot(t, h)
			out, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("one")}})
			if err != nil {
				t.Fatal(err)
			}
			if got := snapshot(t, h); got != before {
				t.Fatalf("the first turn changed the caller's history array:\nbefore %s\nafter  %s", before, got)
			}
			// The caller extends its thread the way callers do, in a new
			// array; then the next turn, carried or not.
			h2 := withRoom(append(slices.Clone(h), out.Items...))
			before2 := snapshot(t, h2)
			items1 := itemsJSON(t, out.Items)
			// Appending to a turn's items must not write the engine's
			// array, which the next turn may go on with.
			mine := append(out.Items, llm.UserText("the caller's own item"))
			t2 := loop.Turn{History: h2, Input: []llm.Item{llm.UserText("two")}}
			if tt.carried {
				t2.Carry = out.Carry
			}
			out2, err := e.Run(t.Context(), t2)
			if err != nil {
				t.Fatal(err)
			}
			m.check(t)
			if got := snapshot(t, h2); got != before2 {
				t.Errorf("the second turn changed the caller's history array:\nbefore %s\nafter  %s", before2, got)
			}
			if got := itemsJSON(t, out.Items); got != items1 {
				t.Errorf("the second turn changed the first turn's items:\nbefore %s\nafter  %s", items1, got)
			}
			if got := mine[len(mine)-1].Text(); got != "the caller's own item" {
				t.Errorf("the second turn wrote over an item the caller appended to the first turn's items: %q", got)
			}
			sent, _ := m.lastRequest()
			for _, it := range sent {
				if it.Text() == "the caller's own item" {
					t.Error("an item the caller appended to the first turn's items was sent in the second turn")
				}
			}
			if err := llm.CheckHistory(append(slices.Clone(h2), out2.Items...)); err != nil {
				t.Errorf("the thread breaks the history invariants: %v", err)
			}
		})
	}
}

func TestCallIDsStayUniqueOnALongThread(t *testing.T) {
	// The thread already holds call_0 … call_999; the model sends call_0 in
	// every round of every turn.
	tests := []struct {
		name    string
		carried bool
		// settle: one exploration round, so every turn records a settle
		// directive (its items are then not carried as they stand).
		settle bool
		// compacted: the thread was compacted after its first 1,000
		// rounds, so no request holds their calls; the thread does.
		compacted bool
	}{
		{name: "each turn copies the thread"},
		{name: "each turn carried from the one before", carried: true},
		{name: "carried, every turn with a directive", carried: true, settle: true},
		{name: "compacted thread, each turn copies it", compacted: true},
		{name: "compacted thread, carried", carried: true, compacted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &repeatModel{calls: 3}
			o := loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter")), LoopThreshold: -1}
			if tt.settle {
				o.MaxRounds = 1
			}
			e, err := loop.New(o)
			if err != nil {
				t.Fatal(err)
			}
			h := threadWith(1000)
			if tt.compacted {
				summary := llm.UserText("summary of the first 1,000 rounds")
				summary.ID, summary.Origin = "t1.1", loop.OriginCompaction
				h = append(h, summary)
			}
			var carry *loop.Carry
			var prev, last []llm.Item // the thread before the last turn, and its items
			for turn := range 20 {
				prev = h
				out, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText(fmt.Sprintf("turn %d", turn))}, Carry: carry})
				if err != nil {
					t.Fatal(err)
				}
				if out.ToolSteps != 3 || out.Answer != "done" {
					t.Fatalf("turn %d: %d tool steps, answer %q", turn, out.ToolSteps, out.Answer)
				}
				last = out.Items
				h = append(h, out.Items...)
				if tt.carried {
					carry = out.Carry
				}
			}
			m.check(t)
			if err := llm.CheckHistory(h); err != nil {
				t.Errorf("the thread breaks the history invariants: %v", err)
			}
			// The last request holds every turn: the ids are unique across
			// the whole thread, not only within a turn.
			sent, _ := m.lastRequest()
			sameItems(t, sent, append(loop.ContextOf(prev), last[:len(last)-1]...))
		})
	}
}

func TestACarryIsUsedOnlyForTheThreadItStandsFor(t *testing.T) {
	type setup struct {
		h     []llm.Item
		carry *loop.Carry
	}
	// After one turn on a thread of n rounds: the thread as the caller
	// holds it and the turn's Carry.
	first := func(t *testing.T, e *loop.Engine, n int) setup {
		t.Helper()
		h := threadWith(n)
		out, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("one")}})
		if err != nil {
			t.Fatal(err)
		}
		return setup{h: append(slices.Clone(h), out.Items...), carry: out.Carry}
	}
	tests := []struct {
		name   string
		rounds int // of the thread; 200 when 0
		opts   func(*loop.Options)
		change func(t *testing.T, e *loop.Engine, s *setup)
		reused bool
	}{
		{name: "the thread as the turn left it", reused: true},
		// A short thread's items are not kept: copying them costs less
		// than holding room to append while the thread is idle.
		{name: "a short thread", rounds: 20},
		{name: "an item more", change: func(_ *testing.T, _ *loop.Engine, s *setup) {
			s.h = append(s.h, llm.UserText("more"))
		}},
		{name: "an item less", change: func(_ *testing.T, _ *loop.Engine, s *setup) {
			s.h = s.h[:len(s.h)-1]
		}},
		{name: "an item taken out of the middle", change: func(_ *testing.T, _ *loop.Engine, s *setup) {
			s.h = slices.Delete(slices.Clone(s.h), 9, 11) // a call and its result
		}},
		{name: "another last item", change: func(_ *testing.T, _ *loop.Engine, s *setup) {
			s.h = slices.Clone(s.h)
			s.h[len(s.h)-1].ID = "other"
		}},
		{name: "no carry", change: func(_ *testing.T, _ *loop.Engine, s *setup) {
			s.carry = nil
		}},
		{name: "a carry another turn took", change: func(t *testing.T, e *loop.Engine, s *setup) {
			if _, err := e.Run(t.Context(), loop.Turn{History: s.h, Input: []llm.Item{llm.UserText("other branch")}, Carry: s.carry}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a context window guard", opts: func(o *loop.Options) { o.Window = nopWindow{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &repeatModel{calls: 1}
			o := loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter"))}
			if tt.opts != nil {
				tt.opts(&o)
			}
			e, err := loop.New(o)
			if err != nil {
				t.Fatal(err)
			}
			s := first(t, e, cmp.Or(tt.rounds, 200))
			_, firstAt := m.lastRequest()
			if tt.change != nil {
				tt.change(t, e, &s)
			}
			out, err := e.Run(t.Context(), loop.Turn{History: s.h, Input: []llm.Item{llm.UserText("two")}, Carry: s.carry})
			if err != nil {
				t.Fatal(err)
			}
			m.check(t)
			sent, at := m.lastRequest()
			if reused := at == firstAt; reused != tt.reused {
				t.Errorf("the turn went on in the first turn's array: %v, want %v", reused, tt.reused)
			}
			// Carried or copied, a turn sends the same: the thread's
			// context, then its own items (the last request: all but the
			// answer).
			want := append(loop.ContextOf(s.h), out.Items[:len(out.Items)-1]...)
			sameItems(t, sent, want)
		})
	}
}

func TestACarriedTurnLeavesOutEarlierDirectives(t *testing.T) {
	// One exploration round: the first turn settles (a directive), the
	// second is carried and must not send that directive again.
	m := &repeatModel{calls: 2}
	e, err := loop.New(loop.Options{Model: m, MaxRounds: 1, Tools: tool.NewSet(counterTool("counter")), LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := threadWith(200)
	out, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("one")}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out.Items, func(it llm.Item) bool { return it.Origin == llm.OriginDirective }) {
		t.Fatal("the first turn recorded no directive; the test needs one")
	}
	h = append(h, out.Items...)
	m.calls = 0
	if _, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("two")}, Carry: out.Carry}); err != nil {
		t.Fatal(err)
	}
	sent, _ := m.lastRequest()
	for _, it := range sent {
		if it.Origin == llm.OriginDirective {
			t.Errorf("the second turn sent the first turn's directive %q", strings.TrimSpace(it.Text()))
		}
	}
}

func TestAResumedTurnHandsOnItsCarry(t *testing.T) {
	tests := []struct {
		name string
		// viaJSON: the paused State is read back from JSON, as after a
		// restart; the turn then hands on no Carry.
		viaJSON bool
	}{
		{name: "resumed in the same process"},
		{name: "resumed from JSON", viaJSON: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &repeatModel{calls: 1, tool: "ask_user", args: `{"questions":[{"prompt":"which?"}]}`}
			e, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(askTool(), counterTool("counter"))})
			if err != nil {
				t.Fatal(err)
			}
			h := threadWith(200)
			out, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("one")}})
			if err != nil || out.Status != loop.StatusPaused {
				t.Fatalf("status %s, err %v; want paused", out.Status, err)
			}
			if out.Carry != nil {
				t.Error("a paused turn handed on a Carry; its State goes on")
			}
			st := out.State
			if tt.viaJSON {
				b, err := json.Marshal(st)
				if err != nil {
					t.Fatal(err)
				}
				st = &loop.State{}
				if err := json.Unmarshal(b, st); err != nil {
					t.Fatal(err)
				}
			}
			_, resumedAt := m.lastRequest()
			out, err = e.Resume(t.Context(), st, loop.Answer{TurnID: out.TurnID, CallID: out.Pause.CallID, Text: "that one"})
			if err != nil || out.Status != loop.StatusCompleted {
				t.Fatalf("status %s, err %v; want completed", out.Status, err)
			}
			if got := out.Carry != nil; got == tt.viaJSON {
				t.Fatalf("handed on a Carry: %v, want %v", got, !tt.viaJSON)
			}
			h = append(h, out.Items...)
			m.calls = 0
			if _, err := e.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("two")}, Carry: out.Carry}); err != nil {
				t.Fatal(err)
			}
			m.check(t)
			sent, at := m.lastRequest()
			if reused := at == resumedAt; reused == tt.viaJSON {
				t.Errorf("the next turn went on in the resumed turn's array: %v, want %v", reused, !tt.viaJSON)
			}
			sameItems(t, sent, append(loop.ContextOf(h), sent[len(sent)-1]))
		})
	}
}

// shortenWindow's guard shortens the thread's second item (an old tool
// result) for its turn.
type shortenWindow struct{}

func (shortenWindow) Guard() loop.Guard             { return shortenGuard{} }
func (shortenWindow) Cap(res llm.Result) llm.Result { return res }

type shortenGuard struct{}

func (shortenGuard) Observe(llm.Usage) *event.ContextReport { return nil }
func (shortenGuard) Fit(_ context.Context, h guard.History, _ bool) error {
	old := h.Request().At(2).Result()
	short := *old
	short.Content = "[shortened]"
	return h.Shorten(2, llm.ToolResult(short))
}

func TestItemsAGuardShortenedAreNotCarried(t *testing.T) {
	m := &repeatModel{calls: 1}
	guarded, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter")), Window: shortenWindow{}})
	if err != nil {
		t.Fatal(err)
	}
	h := threadWith(200)
	out, err := guarded.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("one")}})
	if err != nil {
		t.Fatal(err)
	}
	if sent, _ := m.lastRequest(); sent[2].Result().Content != "[shortened]" {
		t.Fatal("the guard did not shorten the item; the test needs it to")
	}
	_, firstAt := m.lastRequest()
	// The next turn, without a guard, starts from the thread as recorded.
	plain, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(counterTool("counter"))})
	if err != nil {
		t.Fatal(err)
	}
	h = append(h, out.Items...)
	if _, err := plain.Run(t.Context(), loop.Turn{History: h, Input: []llm.Item{llm.UserText("two")}, Carry: out.Carry}); err != nil {
		t.Fatal(err)
	}
	sent, at := m.lastRequest()
	if at == firstAt {
		t.Error("the next turn went on in the guarded turn's array, shortened items and all")
	}
	if got := sent[2].Result().Content; got != "ok" {
		t.Errorf("the next turn sent the old result as %q, want it as recorded (ok)", got)
	}
}

func TestACarryIsLeftOnlyWhenItSavesTheNextTurnWork(t *testing.T) {
	// A server holds many idle threads: one whose next turn would gain
	// nothing from a Carry holds none.
	tests := []struct {
		name   string
		rounds int // of the thread
		calls  int // the turn's
		want   bool
	}{
		{name: "short thread, no call", rounds: 2, calls: 0, want: false},
		{name: "short thread, a call (the thread's call ids)", rounds: 2, calls: 1, want: true},
		{name: "long thread, no call (its items)", rounds: 200, calls: 0, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := loop.New(loop.Options{Model: &repeatModel{calls: tt.calls}, Tools: tool.NewSet(counterTool("counter"))})
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Run(t.Context(), loop.Turn{History: threadWith(tt.rounds), Input: []llm.Item{llm.UserText("go")}})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Carry != nil; got != tt.want {
				t.Errorf("a Carry was left: %v, want %v", got, tt.want)
			}
		})
	}
}
