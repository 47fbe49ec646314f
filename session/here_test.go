package session_test

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/session"
)

// goid is the id of the calling goroutine, from its stack's first line
// ("goroutine 7 [running]:"); for tests only.
func goid(t *testing.T) uint64 {
	t.Helper()
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(bytes.TrimPrefix(buf, []byte("goroutine ")))
	id, err := strconv.ParseUint(string(f[0]), 10, 64)
	if err != nil {
		t.Fatalf("goroutine id of %q: %v", buf, err)
	}
	return id
}

// TestRunTurnRunsTheTurnOnTheCallersGoroutine: a turn that starts at once
// runs on the goroutine of RunTurn's caller, which waits for it anyway,
// not on a goroutine started for it and handed back.
func TestRunTurnRunsTheTurnOnTheCallersGoroutine(t *testing.T) {
	h := newHarness(t)
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{{Text: "hello"}}})
	var mu sync.Mutex
	var ran uint64
	h.onEvent(func(e event.Event) {
		if e.Type == event.TurnStarted {
			mu.Lock()
			ran = goid(t)
			mu.Unlock()
		}
	})
	tu, err := h.s.RunTurn(t.Context(), th, llm.UserText("hi"))
	if err != nil || tu.Status != session.TurnCompleted || tu.Answer != "hello" {
		t.Fatalf("turn %+v %v", tu, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if me := goid(t); ran != me {
		t.Errorf("the turn ran on goroutine %d, the caller is %d", ran, me)
	}
	verify(t, m)
}

// TestRunTurnHandsTheQueuedTurnToADriver: a turn queued while RunTurn's
// runs is run after it on a goroutine of its own, RunTurn returning its
// own turn's end; Close then finds nothing running.
func TestRunTurnHandsTheQueuedTurnToADriver(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, gateTool("gate", started, release))
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "g1", Name: "gate"}}},
		{Text: "first"},
		{Text: "second"},
	}})
	type result struct {
		tu  session.Turn
		err error
	}
	first := make(chan result, 1)
	go func() {
		tu, err := h.s.RunTurn(t.Context(), th, llm.UserText("one"))
		first <- result{tu, err}
	}()
	<-started
	queued := h.start(th, "two")
	if queued.Status != session.TurnQueued {
		t.Fatalf("the second turn is %s, want queued", queued.Status)
	}
	close(release)
	r := <-first
	if r.err != nil || r.tu.Status != session.TurnCompleted || r.tu.Answer != "first" {
		t.Fatalf("RunTurn returned %+v %v, want its own turn completed", r.tu, r.err)
	}
	if got := h.wait(th, queued.ID); got.Status != session.TurnCompleted || got.Answer != "second" {
		t.Fatalf("the queued turn %+v, want completed", got)
	}
	verify(t, m)
}
