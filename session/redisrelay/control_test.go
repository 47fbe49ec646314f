package redisrelay_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
	"github.com/reinhq/rein/session/redisrelay"
	"github.com/reinhq/rein/tool"
)

// ctlNode is a node of a fleet under control: a scheduler on the shared
// store whose steer and interrupt notices travel by the relay (none when
// quiet), with the tools given.
type ctlNode struct {
	*session.Scheduler
	store *pgstore.Store

	mu sync.Mutex
	// delivered counts the steered items notices brought to this node's
	// turns; arrived is signalled on each.
	delivered int
	arrived   chan struct{}
}

type ctlOptions struct {
	quiet bool // no notices: the other nodes' control reaches turns through the store only
	tools []tool.Tool
	// tl, when not nil, is told when each stage of a steer passes on
	// this node (the store's acceptance, the notice published, received
	// and read from the store).
	tl *timeline
}

// timeline holds when the stages of one steer passed, across the nodes of
// one process: where the time of a slow steer went.
type timeline struct {
	mu sync.Mutex
	at [stages]time.Time
}

// The stages of a steer, in order.
const (
	stStart     = iota // Steer called on the accepting node
	stCommitted        // AddSteer returned: the input is committed
	stPublished        // the notice is published on Redis
	stReceived         // the running node's subscription received it
	stRead             // the running node read the store (Pending returned)
	stArrived          // the input is in the turn's inbox
	stages
)

var stageNames = [stages]string{"start", "commit", "publish", "receive", "read", "inbox"}

func (tl *timeline) mark(stage int) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	tl.at[stage] = time.Now()
	tl.mu.Unlock()
}

func (tl *timeline) reset() {
	tl.mu.Lock()
	tl.at = [stages]time.Time{}
	tl.at[stStart] = time.Now()
	tl.mu.Unlock()
}

// steps returns each stage's time since the one before it.
func (tl *timeline) steps() [stages]time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var d [stages]time.Duration
	for i := 1; i < stages; i++ {
		if !tl.at[i].IsZero() && !tl.at[i-1].IsZero() {
			d[i] = tl.at[i].Sub(tl.at[i-1])
		}
	}
	return d
}

// timedStore is a node's store telling tl when a steer was committed and
// read.
type timedStore struct {
	*pgstore.Store
	tl *timeline
}

func (s timedStore) AddSteer(ctx context.Context, threadID, turnID string, it llm.Item) error {
	err := s.Store.AddSteer(ctx, threadID, turnID, it)
	s.tl.mark(stCommitted)
	return err
}

func (s timedStore) Pending(ctx context.Context, threadID, turnID string) (session.Pending, error) {
	p, err := s.Store.Pending(ctx, threadID, turnID)
	s.tl.mark(stRead)
	return p, err
}

// timedControl is a node's relay telling tl when a notice was published.
type timedControl struct {
	*redisrelay.Relay
	tl *timeline
}

func (c timedControl) Notify(ctx context.Context, n session.Notice) error {
	err := c.Relay.Notify(ctx, n)
	c.tl.mark(stPublished)
	return err
}

func newCtlNode(t testing.TB, name, url, addr, prefix string, s scripted.Script, o ctlOptions) *ctlNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := pgstore.Open(ctx, pgstore.Config{URL: url, Node: name})
	if err != nil {
		t.Fatal(err)
	}
	r, err := redisrelay.Open(ctx, redisrelay.Config{Addr: addr, Prefix: prefix, Node: name})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s, scripted.RecordRequests())
	cfg := session.Config{Store: st, Events: r, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
		return loop.Options{Model: m, Tools: tool.NewSet(o.tools...), Grace: 100 * time.Millisecond}, nil, nil
	}}
	if !o.quiet {
		cfg.Control = r
	}
	if o.tl != nil {
		cfg.Store = timedStore{Store: st, tl: o.tl}
		if !o.quiet {
			cfg.Control = timedControl{Relay: r, tl: o.tl}
		}
	}
	sched, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &ctlNode{Scheduler: sched, store: st, arrived: make(chan struct{}, 64)}
	ready := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.Run(ctx, sched.Relay)
	}()
	go func() {
		defer wg.Done()
		if o.quiet {
			close(ready)
			return
		}
		r.RunControl(ctx, func(nt session.Notice) {
			o.tl.mark(stReceived)
			if k := sched.Notice(nt); k > 0 {
				o.tl.mark(stArrived)
				n.mu.Lock()
				n.delivered += k
				n.mu.Unlock()
				n.arrived <- struct{}{}
			}
		}, ready)
	}()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		sched.Close(cctx)
		cancel()
		wg.Wait()
		r.Close()
		st.Close()
	})
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("the control of %s did not subscribe within 30s", name)
	}
	select {
	case <-r.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("the relay of %s did not subscribe within 30s", name)
	}
	return n
}

// gate is a tool that signals when it runs and answers once released.
func gate(started chan<- struct{}, release <-chan struct{}) tool.Tool {
	return &fakeTool{spec: tool.Spec{Name: "work", Access: tool.ReadOnly}, run: func(ctx context.Context, _ tool.Call) (tool.Output, error) {
		started <- struct{}{}
		select {
		case <-release:
			return tool.Output{Text: "work done"}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}}
}

// ask pauses the turn as ask_user does.
func ask() tool.Tool {
	return &fakeTool{spec: tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		qs := []tool.Question{{Prompt: "Which city?"}}
		loop.QuestionIDs(qs)
		return tool.Output{Text: "[awaiting user reply]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: qs}}, nil
	}}
}

type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	return f.run(ctx, c)
}

func waitTurn(t testing.TB, s *session.Scheduler, thread, turn string) session.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	got, err := s.Wait(ctx, thread, turn)
	if err != nil {
		t.Fatalf("turn %s: %v", turn, err)
	}
	return got
}

// steerScript runs work, then answers only when the steered input is in
// the request.
var steerScript = scripted.Script{Rounds: []scripted.Round{
	{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
	{Text: "in metric", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "metric"}}}},
}}

// Input steered on a node that does not run the turn is stored, reaches
// the running node's turn by a notice before the turn's next round, and
// the model reads it there; another node's interrupt stops a turn there.
func TestSteerAndInterruptFromOtherNodes(t *testing.T) {
	url := servicetest.Postgres(t)
	addr, prefix := servicetest.Redis(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	script := steerScript
	script.Rounds = append(script.Rounds,
		scripted.Round{Text: strings.Repeat("slow ", 400), Chunk: 5, Delay: 20 * time.Millisecond})
	a := newCtlNode(t, "a", url, addr, prefix, script, ctlOptions{tools: []tool.Tool{gate(started, release)}})
	b := newCtlNode(t, "b", url, addr, prefix, scripted.Script{}, ctlOptions{})
	c := newCtlNode(t, "c", url, addr, prefix, scripted.Script{}, ctlOptions{})

	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := a.Start(t.Context(), th.ID, llm.UserText("plan"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	id, err := b.Steer(t.Context(), th.ID, tu.ID, llm.UserText("use metric units"))
	if err != nil {
		t.Fatalf("node b's steer of node a's turn: %v", err)
	}
	select {
	case <-a.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the steer accepted on node b did not reach node a's turn by a notice")
	}
	close(release)
	if got := waitTurn(t, a.Scheduler, th.ID, tu.ID); got.Status != session.TurnCompleted || got.Answer != "in metric" {
		t.Fatalf("node a's turn ended %s %q (%s), want completed having read the steer", got.Status, got.Answer, got.Error)
	}
	snap, err := a.ReadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := countItem(snap.Items, id); n != 1 {
		t.Errorf("the steered item %s is in the history %d times, want once", id, n)
	}

	// Steering a turn that is not the thread's is refused as on the
	// running node.
	var mismatch *session.TurnMismatchError
	if _, err := c.Steer(t.Context(), th.ID, "turn-x", llm.UserText("late")); !errors.Is(err, session.ErrNoActiveTurn) && !errors.As(err, &mismatch) {
		t.Errorf("steer of a turn that does not run: %v, want no active turn", err)
	}

	// Node a streams slowly; node c interrupts it.
	tu2, err := a.Start(t.Context(), th.ID, llm.UserText("talk"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := a.Subscribe(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for streaming := false; !streaming; {
		evs, err := sub.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			streaming = streaming || (e.TurnID == tu2.ID && e.Delta != "")
		}
	}
	asked := time.Now()
	if err := c.Interrupt(t.Context(), th.ID, tu2.ID); err != nil {
		t.Fatalf("node c's interrupt of node a's turn: %v", err)
	}
	got := waitTurn(t, a.Scheduler, th.ID, tu2.ID)
	if got.Status != session.TurnInterrupted {
		t.Fatalf("node a's turn ended %s after node c's interrupt, want interrupted", got.Status)
	}
	// The stream lasts 8 s; the interrupt stops it at once.
	if d := time.Since(asked); d > 5*time.Second {
		t.Errorf("the interrupt took %v to stop the turn", d)
	}
}

// Without notices (Redis lost them) the running node still reads steered
// input at its turn's next round boundary, from the store: the acceptance
// is the store's, not the message's.
func TestSteerWithoutNoticeIsReadAtTheNextRound(t *testing.T) {
	url := servicetest.Postgres(t)
	addr, prefix := servicetest.Redis(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := newCtlNode(t, "a", url, addr, prefix, steerScript, ctlOptions{quiet: true, tools: []tool.Tool{gate(started, release)}})
	b := newCtlNode(t, "b", url, addr, prefix, scripted.Script{}, ctlOptions{quiet: true})
	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := a.Start(t.Context(), th.ID, llm.UserText("plan"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	id, err := b.Steer(t.Context(), th.ID, tu.ID, llm.UserText("use metric units"))
	if err != nil {
		t.Fatalf("node b's steer: %v", err)
	}
	close(release)
	if got := waitTurn(t, a.Scheduler, th.ID, tu.ID); got.Status != session.TurnCompleted || got.Answer != "in metric" {
		t.Fatalf("node a's turn ended %s %q (%s), want completed having read the steer", got.Status, got.Answer, got.Error)
	}
	snap, err := a.ReadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := countItem(snap.Items, id); n != 1 {
		t.Errorf("the steered item %s is in the history %d times, want once", id, n)
	}
}

// A turn paused on one node is answered on another that read the thread
// before the pause, and goes on there; a turn started on a third node
// while the thread runs is queued and run after it.
func TestAnswerAndQueueFromOtherNodes(t *testing.T) {
	url := servicetest.Postgres(t)
	addr, prefix := servicetest.Redis(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := newCtlNode(t, "a", url, addr, prefix, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}},
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "worked"},
		{Text: "queued ran", Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "after"}}}},
	}}, ctlOptions{tools: []tool.Tool{ask(), gate(started, release)}})
	c := newCtlNode(t, "c", url, addr, prefix, scripted.Script{Rounds: []scripted.Round{
		{Text: "Paris it is", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "Paris"}}}},
	}}, ctlOptions{tools: []tool.Tool{ask()}})
	b := newCtlNode(t, "b", url, addr, prefix, scripted.Script{}, ctlOptions{})

	th, err := a.CreateThread(t.Context(), session.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Node c reads the thread before the pause: what it holds is stale.
	if _, err := c.ResumeThread(t.Context(), th.ID); err != nil {
		t.Fatal(err)
	}
	tu, err := a.Start(t.Context(), th.ID, llm.UserText("trip"))
	if err != nil {
		t.Fatal(err)
	}
	if got := waitTurn(t, a.Scheduler, th.ID, tu.ID); got.Status != session.TurnPaused {
		t.Fatalf("node a's turn %s, want paused", got.Status)
	}
	if err := c.Answer(t.Context(), th.ID, loop.Answer{TurnID: tu.ID, CallID: "a1", Text: "Paris"}); err != nil {
		t.Fatalf("node c's answer of the turn paused on node a: %v", err)
	}
	if got := waitTurn(t, c.Scheduler, th.ID, tu.ID); got.Status != session.TurnCompleted || got.Answer != "Paris it is" {
		t.Fatalf("the answered turn ended %s %q (%s) on node c", got.Status, got.Answer, got.Error)
	}

	// Node a runs a turn; node b's turn/start queues behind it.
	tu2, err := a.Start(t.Context(), th.ID, llm.UserText("work"))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	q, err := b.Start(t.Context(), th.ID, llm.UserText("after that"))
	if err != nil {
		t.Fatalf("node b's turn/start on a thread node a runs: %v", err)
	}
	if q.Status != session.TurnQueued {
		t.Fatalf("node b's turn is %s, want queued", q.Status)
	}
	close(release)
	if got := waitTurn(t, a.Scheduler, th.ID, tu2.ID); got.Status != session.TurnCompleted {
		t.Fatalf("node a's turn ended %s (%s)", got.Status, got.Error)
	}
	if got := waitTurn(t, a.Scheduler, th.ID, q.ID); got.Status != session.TurnCompleted || got.Answer != "queued ran" {
		t.Fatalf("node b's queued turn ended %s %q (%s) on node a", got.Status, got.Answer, got.Error)
	}
	snap, err := b.ReadThread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("history: %v", err)
	}
}

func countItem(items []llm.Item, id string) int {
	n := 0
	for _, it := range items {
		if it.ID == id {
			n++
		}
	}
	return n
}

// BenchmarkSteerAcrossNodes measures a steer accepted on node b reaching
// the turn node a runs: from b's Steer call (the input committed to
// PostgreSQL, the notice published on Redis) to a's notice handler having
// read it from the store into the turn's inbox. It reports the median and
// the 99th percentile of b.N steers, and the 99th percentile of the
// acceptance alone (Steer's return: committed and the notice published).
func BenchmarkSteerAcrossNodes(b *testing.B) {
	b.ReportAllocs()
	url := servicetest.Postgres(b)
	addr, prefix := servicetest.Redis(b)
	tl := &timeline{}
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := newCtlNode(b, "a", url, addr, prefix, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
		{Text: "done"},
	}}, ctlOptions{tools: []tool.Tool{gate(started, release)}, tl: tl})
	n := newCtlNode(b, "b", url, addr, prefix, scripted.Script{}, ctlOptions{tl: tl})
	ctx := context.Background()
	th, err := a.CreateThread(ctx, session.ThreadConfig{})
	if err != nil {
		b.Fatal(err)
	}
	tu, err := a.Start(ctx, th.ID, llm.UserText("work"))
	if err != nil {
		b.Fatal(err)
	}
	<-started
	type sample struct {
		took, accepted time.Duration
		steps          [stages]time.Duration
	}
	samples := make([]sample, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		tl.reset()
		t0 := time.Now()
		if _, err := n.Steer(ctx, th.ID, tu.ID, llm.UserText(fmt.Sprintf("steer %d", i))); err != nil {
			b.Fatal(err)
		}
		accepted := time.Since(t0)
		select {
		case <-a.arrived:
		case <-time.After(30 * time.Second):
			b.Fatalf("steer %d did not reach node a", i)
		}
		samples = append(samples, sample{took: time.Since(t0), accepted: accepted, steps: tl.steps()})
	}
	b.StopTimer()
	close(release)
	waitTurn(b, a.Scheduler, th.ID, tu.ID)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	slices.SortFunc(samples, func(x, y sample) int { return cmp.Compare(x.accepted, y.accepted) })
	b.ReportMetric(ms(samples[len(samples)*99/100].accepted), "accepted-p99-ms")
	slices.SortFunc(samples, func(x, y sample) int { return cmp.Compare(x.took, y.took) })
	b.ReportMetric(ms(samples[len(samples)/2].took), "p50-ms")
	b.ReportMetric(ms(samples[len(samples)*99/100].took), "p99-ms")
	b.ReportMetric(ms(samples[len(samples)-1].took), "max-ms")
	// The timelines of the slowest steers: which stage took the time.
	for _, s := range samples[max(0, len(samples)-3):] {
		line := fmt.Sprintf("steer of %.1f ms:", ms(s.took))
		for st := 1; st < stages; st++ {
			line += fmt.Sprintf(" %s +%.1f", stageNames[st], ms(s.steps[st]))
		}
		b.Log(line)
	}
}
