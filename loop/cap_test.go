package loop_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// hostileModel is a model whose first `endless` streams never end: they
// send what `send` makes of step n, forever (or block, when it returns no
// event), each after `every`. Later streams answer "best effort". It counts
// what it sent and checks that every stream was closed.
type hostileModel struct {
	endless int
	every   time.Duration
	send    func(n int) (llm.Event, bool)

	mu       sync.Mutex
	streams  int
	open     int
	sent     atomic.Int64 // delta bytes handed to the engine
	requests [][]llm.Item
}

func (h *hostileModel) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams++
	h.open++
	h.requests = append(h.requests, append([]llm.Item(nil), req.Items...))
	return &hostileStream{h: h, ctx: ctx, endless: h.streams <= h.endless}, nil
}

func (h *hostileModel) stillOpen() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

type hostileStream struct {
	h       *hostileModel
	ctx     context.Context
	endless bool
	n       int
	closed  bool
}

func (s *hostileStream) Recv() (llm.Event, error) {
	if s.closed {
		return llm.Event{}, errors.New("hostile: Recv after Close")
	}
	if err := s.ctx.Err(); err != nil {
		return llm.Event{}, err
	}
	if !s.endless {
		s.n++
		switch {
		case s.n == 1:
			return llm.Event{Kind: llm.EventText, Delta: "best effort"}, nil
		case s.n > 2:
			return llm.Event{}, io.EOF
		}
		return llm.Event{Kind: llm.EventDone, Response: &llm.Response{Parts: []llm.Part{{Kind: llm.PartText, Text: "best effort"}}, Finish: llm.FinishStop}}, nil
	}
	if s.h.every > 0 {
		t := time.NewTimer(s.h.every)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return llm.Event{}, s.ctx.Err()
		case <-t.C:
		}
	}
	ev, ok := s.h.send(s.n)
	s.n++
	if !ok {
		<-s.ctx.Done() // a stall: nothing more until the caller gives up
		return llm.Event{}, s.ctx.Err()
	}
	s.h.sent.Add(int64(len(ev.Delta)))
	if ev.Call != nil {
		s.h.sent.Add(int64(len(ev.Call.Args)))
	}
	return ev, nil
}

func (s *hostileStream) Close() error {
	if !s.closed {
		s.closed = true
		s.h.mu.Lock()
		s.h.open--
		s.h.mu.Unlock()
	}
	return nil
}

var chunk = strings.Repeat("x", 1000)

func endlessText(int) (llm.Event, bool) { return llm.Event{Kind: llm.EventText, Delta: chunk}, true }

func endlessReasoning(int) (llm.Event, bool) {
	return llm.Event{Kind: llm.EventReasoning, Delta: chunk}, true
}

// endlessArgs starts one call to echo and sends its arguments forever.
func endlessArgs(n int) (llm.Event, bool) {
	if n == 0 {
		return llm.Event{Kind: llm.EventCallStart, Index: 0, Call: &llm.Call{ID: "c1", Name: "echo"}}, true
	}
	return llm.Event{Kind: llm.EventCallDelta, Index: 0, Delta: chunk}, true
}

// wholeArgs completes a call to echo with 2 MB of arguments at once, after
// a first call that is fine.
func wholeArgs(n int) (llm.Event, bool) {
	switch n {
	case 0:
		return llm.Event{Kind: llm.EventCallDone, Index: 0, Call: &llm.Call{ID: "c0", Name: "echo", Args: `{}`}}, true
	case 1:
		return llm.Event{Kind: llm.EventCallDone, Index: 1, Call: &llm.Call{ID: "c1", Name: "echo", Args: `{"a":"` + strings.Repeat("y", 2<<20) + `"}`}}, true
	}
	return llm.Event{}, false
}

// emptyCalls announces calls without arguments, forever.
func emptyCalls(n int) (llm.Event, bool) {
	return llm.Event{Kind: llm.EventCallStart, Index: n, Call: &llm.Call{ID: "c", Name: "echo"}}, true
}

func stall(int) (llm.Event, bool) { return llm.Event{}, false }

func runHostile(t *testing.T, h *hostileModel, o loop.Options) (*loop.Outcome, *events, *atomic.Int32, time.Duration, error) {
	t.Helper()
	var ran atomic.Int32
	ev := &events{}
	o.Model, o.Events = h, ev
	o.Tools = tool.NewSet(&fakeTool{
		spec: tool.Spec{Name: "echo", Access: tool.ReadOnly},
		run: func(context.Context, tool.Call) (tool.Output, error) {
			ran.Add(1)
			return tool.Output{Text: "ok"}, nil
		},
	})
	e, err := loop.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	out, err := e.Run(ctx, loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	took := time.Since(start)
	if out == nil {
		t.Fatalf("no outcome (err %v)", err)
	}
	if n := h.stillOpen(); n != 0 {
		t.Errorf("%d model streams left open", n)
	}
	if err := llm.CheckHistory(out.Items); err != nil {
		t.Errorf("the turn's items break the history invariants: %v", err)
	}
	for i, items := range h.requests {
		if err := llm.CheckHistory(items); err != nil {
			t.Errorf("request %d breaks the history invariants: %v", i+1, err)
		}
	}
	return out, ev, &ran, took, err
}

// TestEndlessStreamIsCutAtTheCap: a model stream that never ends is cut at
// the round's caps; the turn fails with stop reason output_capped and a
// *CapError naming the cap, and a warning says so. Before the caps the
// engine read such a stream until memory ran out.
func TestEndlessStreamIsCutAtTheCap(t *testing.T) {
	const maxOut, maxArgs = 64 << 10, 16 << 10
	tests := []struct {
		name    string
		send    func(int) (llm.Event, bool)
		cap     string
		limit   int64
		text    bool // the cut round's text is kept
		callRan int32
	}{
		{"text", endlessText, loop.CapRoundOutput, maxOut, true, 0},
		{"reasoning", endlessReasoning, loop.CapRoundOutput, maxOut, false, 0},
		{"call arguments", endlessArgs, loop.CapCallArgs, maxArgs, false, 0},
		{"arguments delivered whole", wholeArgs, loop.CapCallArgs, maxArgs, false, 1},
		{"a flood of empty calls", emptyCalls, loop.CapRoundOutput, maxOut, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &hostileModel{endless: 1, send: tt.send}
			out, ev, ran, _, err := runHostile(t, h, loop.Options{MaxRoundOutput: maxOut, MaxCallArgs: maxArgs})
			var ce *loop.CapError
			if !errors.As(err, &ce) || ce.Cap != tt.cap || ce.Limit != tt.limit {
				t.Fatalf("err = %v, want a *CapError for %s at %d", err, tt.cap, tt.limit)
			}
			if tt.cap == loop.CapCallArgs && (ce.Call != "echo" || !strings.Contains(err.Error(), "echo")) {
				t.Errorf("err = %v, want it to name the call (echo)", err)
			}
			if out.Status != loop.StatusFailed || out.StopReason != loop.StopOutputCapped {
				t.Errorf("outcome %s/%s, want failed/output_capped", out.Status, out.StopReason)
			}
			if got := h.sent.Load(); got > maxOut+int64(len(chunk))+(2<<20)+64 {
				t.Errorf("the engine read %d bytes of a stream capped at %d", got, maxOut)
			}
			if h.streams != 1 {
				t.Errorf("%d model calls, want 1: a model past a cap is not asked again", h.streams)
			}
			if n := ran.Load(); n != tt.callRan {
				t.Errorf("%d calls ran, want %d: a cut call never runs", n, tt.callRan)
			}
			var w []event.Event
			for _, e := range ev.of(event.Warning) {
				if e.Code == event.WarnOutputCap {
					w = append(w, e)
				}
			}
			if len(w) != 1 || !strings.Contains(w[0].Content, formatCap(tt.limit)) {
				t.Errorf("warnings %v, want one output_cap warning naming %s", ev.warnings(), formatCap(tt.limit))
			}
			var text int
			for _, it := range out.Items {
				for _, p := range it.Parts {
					if p.Kind == llm.PartText && it.Role == llm.RoleAssistant {
						text += len(p.Text)
					}
					if p.Kind == llm.PartCall && p.Call != nil && len(p.Call.Args) > maxArgs {
						t.Errorf("a call with %d bytes of arguments was recorded", len(p.Call.Args))
					}
				}
			}
			// The history keeps the start of a capped round's text, not
			// all of it: the whole would not fit a later request.
			if text > 20<<10 || tt.text != (text > 0) {
				t.Errorf("the cut round kept %d bytes of text (cap %d)", text, maxOut)
			}
		})
	}
}

func formatCap(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n>>10, 10) + " KiB"
}

// TestCapsHaveDefaults: with no caps given an endless stream is cut at the
// default caps, and a negative cap turns one off.
func TestCapsHaveDefaults(t *testing.T) {
	h := &hostileModel{endless: 1, send: endlessText}
	_, _, _, _, err := runHostile(t, h, loop.Options{})
	var ce *loop.CapError
	if !errors.As(err, &ce) || ce.Limit != loop.DefaultMaxRoundOutput {
		t.Fatalf("err = %v, want the default cap of %d", err, loop.DefaultMaxRoundOutput)
	}
	h = &hostileModel{endless: 1, send: endlessArgs}
	_, _, _, _, err = runHostile(t, h, loop.Options{MaxRoundOutput: -1})
	if !errors.As(err, &ce) || ce.Cap != loop.CapCallArgs || ce.Limit != loop.DefaultMaxCallArgs {
		t.Fatalf("err = %v, want the default argument cap of %d", err, loop.DefaultMaxCallArgs)
	}
}

// TestDeadlineCutsTheStreamInFlight: the time budget is the deadline of
// the stream itself. A stream that keeps sending (or stalls) is cut when
// the budget runs out and the turn ends through the forced final round
// with stop reason forced_time; before, the budget was checked between
// rounds only and such a turn never ended.
func TestDeadlineCutsTheStreamInFlight(t *testing.T) {
	const budget = 300 * time.Millisecond
	tests := []struct {
		name    string
		endless int
		send    func(int) (llm.Event, bool)
		status  loop.Status
		answer  string
		err     error
		within  time.Duration
	}{
		{"slow text, then an answer", 1, endlessText, loop.StatusCompleted, "best effort", nil, budget + time.Second},
		{"stall, then an answer", 1, stall, loop.StatusCompleted, "best effort", nil, budget + time.Second},
		{"slow call arguments, then an answer", 1, endlessArgs, loop.StatusCompleted, "best effort", nil, budget + time.Second},
		// The forced round is endless too: it is cut after its grace (1 s
		// at least) and what it said is the answer.
		{"slow text throughout", 2, endlessText, loop.StatusCompleted, "", nil, budget + 2*time.Second},
		{"stall throughout", 2, stall, loop.StatusFailed, "", loop.ErrTimeBudget, budget + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &hostileModel{endless: tt.endless, every: 5 * time.Millisecond, send: tt.send}
			out, ev, ran, took, err := runHostile(t, h, loop.Options{Budget: loop.Budget{Time: budget}})
			if took > tt.within {
				t.Errorf("the turn took %s with a budget of %s", took, budget)
			}
			if out.StopReason != loop.StopForcedTime || out.Status != tt.status {
				t.Fatalf("outcome %s/%s (err %v), want %s/forced_time", out.Status, out.StopReason, err, tt.status)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			if tt.answer != "" && out.Answer != tt.answer {
				t.Errorf("answer %q, want %q", out.Answer, tt.answer)
			}
			if tt.status == loop.StatusCompleted && out.Answer == "" {
				t.Error("a completed turn with no answer")
			}
			if h.streams != 2 {
				t.Errorf("%d model calls, want 2 (the cut round and the forced one)", h.streams)
			}
			if ran.Load() != 0 {
				t.Error("a call cut at the deadline ran")
			}
			if !slices.Contains(ev.warnings(), event.WarnDeadline) {
				t.Errorf("warnings %v, want a deadline warning", ev.warnings())
			}
		})
	}
}

// TestCallerCancellationIsNotTheDeadline: cancelling the turn's context
// still interrupts it, with a time budget set or not.
func TestCallerCancellationIsNotTheDeadline(t *testing.T) {
	h := &hostileModel{endless: 1, every: time.Millisecond, send: stall}
	e, err := loop.New(loop.Options{Model: h, Budget: loop.Budget{Time: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	out, _ := e.Run(ctx, loop.Turn{Input: []llm.Item{llm.UserText("go")}})
	if out.Status != loop.StatusInterrupted {
		t.Fatalf("status %s/%s, want interrupted", out.Status, out.StopReason)
	}
}
