package session_test

import (
	"context"
	"errors"
	"slices"
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

// handoffStore is a MemStore that can hand a turn over (session.Handoff),
// as a store shared by nodes does; it notes the turns handed over.
type handoffStore struct {
	*session.MemStore
	mu     sync.Mutex
	handed []string
}

func (h *handoffStore) Handover(_ context.Context, turnID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handed = append(h.handed, turnID)
	return nil
}

func (h *handoffStore) handedOver() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.handed)
}

// node is a scheduler on a shared store whose threads all play one
// scripted model, with tools.
func node(t *testing.T, st session.Store, m *scripted.Model, tools ...tool.Tool) *session.Scheduler {
	t.Helper()
	s, err := session.New(session.Config{Store: st, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m, Tools: tool.NewSet(tools...), Grace: 100 * time.Millisecond}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s
}

// A draining scheduler refuses new turns (ErrDraining, which clients read
// as ErrTurnBusy), lets its running turn finish the round it is in, and
// hands it over at the round boundary: nothing of its end is recorded or
// announced. Another scheduler on the store goes on with it from its
// committed items: the finished round is not asked for again, and the turn
// completes with each round in the history once.
func TestDrainHandsARunningTurnOverAtARoundBoundary(t *testing.T) {
	st := &handoffStore{MemStore: session.NewMemStore()}
	started, release := make(chan struct{}, 1), make(chan struct{})
	first := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Text: "looking", Calls: []scripted.Call{{Name: "look", Args: map[string]any{}}}},
		{Text: "never asked here"},
	}}, scripted.RecordRequests())
	a := node(t, st, first, gateTool("look", started, release))
	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.Subscribe(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	tu, err := a.Start(t.Context(), th.ID, llm.UserText("go"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		drained <- a.Drain(ctx)
	}()
	for !a.Draining() {
		time.Sleep(time.Millisecond)
	}
	if _, err := a.Start(t.Context(), other.ID, llm.UserText("new")); !errors.Is(err, session.ErrDraining) || !errors.Is(err, session.ErrTurnBusy) {
		t.Errorf("a draining scheduler started a turn: %v", err)
	}
	close(release)
	if err := <-drained; err != nil {
		t.Fatalf("drain: %v", err)
	}
	if got := st.handedOver(); len(got) != 1 || got[0] != tu.ID {
		t.Fatalf("handed over %v, want the running turn", got)
	}
	if n := len(first.Requests()); n != 1 {
		t.Errorf("the draining node asked the model %d times, want once (the round it was in)", n)
	}
	evs, _ := sub.Poll()
	for _, e := range evs {
		if e.Type == event.TurnCompleted {
			t.Errorf("the handed-over turn was announced ended: %+v", e)
		}
	}
	snap, err := st.LoadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.Turns[0].Status; s != session.TurnInProgress {
		t.Fatalf("the handed-over turn is %s in the store, want still running", s)
	}

	second := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "done"}}}, scripted.RecordRequests())
	b := node(t, st, second)
	if err := b.Continue(t.Context(), session.Continuation{Turn: snap.Turns[0], Lost: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	end, err := b.Wait(ctx, th.ID, tu.ID)
	if err != nil || end.Status != session.TurnCompleted || end.Answer != "done" {
		t.Fatalf("the turn ended %s %q, %v on the other node; want completed", end.Status, end.Answer, err)
	}
	verify(t, second)
	snap, _ = st.LoadThread(t.Context(), th.ID)
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Error(err)
	}
	var texts []string
	for _, it := range snap.Items {
		if it.Role == llm.RoleAssistant {
			texts = append(texts, it.Text())
		}
	}
	if strings.Join(texts, "|") != "looking|done" {
		t.Errorf("the replies in the history are %q, want each round once", texts)
	}
}

// A turn taken over from a lost node runs again the call it had in flight
// whose tool only reads, answers "aborted: node lost" to one whose tool
// writes (it may have partly run: the model decides), records both before
// the next model request, and tells subscribers that what streamed after
// the last stored item is superseded.
func TestATakenOverTurnRerunsReadsAndAbortsWrites(t *testing.T) {
	st := session.NewMemStore()
	th := session.Thread{ID: "th", Created: time.Now(), Updated: time.Now()}
	if err := st.SaveThread(t.Context(), th); err != nil {
		t.Fatal(err)
	}
	rec := session.Turn{ID: "t1", ThreadID: "th", Status: session.TurnInProgress, Started: time.Now()}
	if _, err := st.ClaimTurn(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	calls := []llm.Call{{ID: "c1", Name: "look", Args: `{}`}, {ID: "c2", Name: "write", Args: `{}`}}
	for _, it := range []llm.Item{
		{ID: "t1.1", TurnID: "t1", Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "go"}}},
		{ID: "t1.2", TurnID: "t1", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &calls[0]}, {Kind: llm.PartCall, Call: &calls[1]}}},
	} {
		if err := st.Record(t.Context(), "th", it); err != nil {
			t.Fatal(err)
		}
	}
	wrote := false
	write := &fakeTool{spec: tool.Spec{Name: "write", Access: tool.Mutating}, run: func(context.Context, tool.Call) (tool.Output, error) {
		wrote = true
		return tool.Output{Text: "wrote"}, nil
	}}
	look := &fakeTool{spec: tool.Spec{Name: "look", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "the value"}, nil
	}}
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: "done"}}}, scripted.RecordRequests())
	s := node(t, st, m, look, write)
	sub, err := s.Subscribe(t.Context(), "th")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.Continue(t.Context(), session.Continuation{Turn: rec, Lost: true, Rerun: calls}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	end, err := s.Wait(ctx, "th", "t1")
	if err != nil || end.Status != session.TurnCompleted {
		t.Fatalf("the taken-over turn ended %s, %v; want completed", end.Status, err)
	}
	verify(t, m)
	if wrote {
		t.Error("the writing call was run again")
	}
	results := map[string]string{}
	for _, it := range m.Requests()[0].Items {
		if r := it.Result(); it.Role == llm.RoleTool && r != nil {
			results[r.CallID] = r.Content
		}
	}
	if results["c1"] != "the value" || !strings.HasPrefix(results["c2"], "aborted: node lost") {
		t.Errorf("the request's results are %q; want the read run again and the write aborted", results)
	}
	superseded := false
	for {
		evs, err := sub.Poll()
		if err != nil || len(evs) == 0 {
			break
		}
		for _, e := range evs {
			superseded = superseded || (e.Type == event.Warning && e.Code == session.WarnRoundSuperseded && e.Extra["after"] == "t1.2")
		}
	}
	if !superseded {
		t.Error("subscribers were not told that what streamed after t1.2 is superseded")
	}
}
