package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/reinhq/rein/record"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/anthropic"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// The deadline of the hanging tool and the grace period after it: short, so
// the row takes a tenth of a second, and far from the turn's own timeout.
const (
	hangDeadline = 50 * time.Millisecond
	hangGrace    = 50 * time.Millisecond
	// turnTimeout bounds one row's turn, so that a row that hangs fails
	// instead of stalling the matrix.
	turnTimeout = 20 * time.Second
)

// mock is what the matrix needs of a mock provider server: the requests it
// received, each decoded back to items and checked against the invariants.
type mock interface {
	Requests() []testkit.Captured
}

// truncated is the finish of a round cut by the output limit, as a Round's
// Finish; each protocol sends it in its own words.
const truncated = "length"

// protocol starts a mock server speaking one wire protocol with a script of
// rounds and returns it with the real adapter pointed at it.
type protocol struct {
	name  string
	start func(t *testing.T, hc *http.Client, rounds []testkit.Round) (mock, llm.Model)
}

var protocols = []protocol{
	{"chat", func(t *testing.T, hc *http.Client, rounds []testkit.Round) (mock, llm.Model) {
		srv := testkit.NewChatServer(t, rounds...)
		return srv, openai.NewChat(openai.Options{APIKey: "test", BaseURL: srv.BaseURL(), Model: "mock", HTTPClient: hc})
	}},
	{"responses", func(t *testing.T, hc *http.Client, rounds []testkit.Round) (mock, llm.Model) {
		srv := testkit.NewResponsesServer(t, finishAs(rounds, "max_output_tokens")...)
		return srv, openai.NewResponses(openai.Options{APIKey: "test", BaseURL: srv.BaseURL(), Model: "mock", HTTPClient: hc})
	}},
	{"anthropic", func(t *testing.T, hc *http.Client, rounds []testkit.Round) (mock, llm.Model) {
		ar := make([]testkit.AnthropicRound, len(rounds))
		for i, r := range finishAs(rounds, "max_tokens") {
			ar[i] = testkit.AnthropicRound{Round: r}
		}
		srv := testkit.NewAnthropicServer(t, ar...)
		m, err := anthropic.New(anthropic.Options{APIKey: "test", BaseURL: srv.BaseURL(), Model: "claude-mock", HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		return srv, m
	}},
}

// finishAs returns the rounds with the truncated finish in the words of a
// protocol.
func finishAs(rounds []testkit.Round, cut string) []testkit.Round {
	out := slices.Clone(rounds)
	for i := range out {
		if out[i].Finish == truncated {
			out[i].Finish = cut
		}
	}
	return out
}

// toolbox holds the row's tools and counts how often each one ran.
type toolbox struct {
	weatherRuns atomic.Int32
	deleteRuns  atomic.Int32
	hangStarted atomic.Int32
	release     chan struct{} // closed to let the hanging tool return
	once        sync.Once

	// turn is the turn's composed list; registry also holds delete_file,
	// a tool that exists in the program but is not offered in this turn.
	turn, registry *tool.Set
}

type weatherIn struct {
	Location string `json:"location" jsonschema:"the city"`
}

type deleteIn struct {
	Path string `json:"path"`
}

type noArgs struct{}

func newToolbox() *toolbox {
	b := &toolbox{release: make(chan struct{})}
	weather := tool.New("weather", "Current weather in a city.",
		func(_ context.Context, in weatherIn) (tool.Output, error) {
			b.weatherRuns.Add(1)
			return tool.Text(in.Location + ": 31 °C, sunny"), nil
		}, tool.WithAccess(tool.ReadOnly))
	// hang ignores its context: it is the tool that must be abandoned
	// after its deadline and the grace period. Its goroutine ends when the
	// row releases it.
	hang := tool.New("hang", "Waits for a remote job.",
		func(context.Context, noArgs) (tool.Output, error) {
			b.hangStarted.Add(1)
			<-b.release
			return tool.Text("finally done"), nil
		}, tool.WithAccess(tool.ReadOnly))
	explode := tool.New("explode", "Always panics.",
		func(context.Context, noArgs) (tool.Output, error) {
			panic("boom: index out of range [3] with length 2")
		}, tool.WithAccess(tool.ReadOnly))
	deleteFile := tool.New("delete_file", "Deletes a file.",
		func(context.Context, deleteIn) (tool.Output, error) {
			b.deleteRuns.Add(1)
			return tool.Text("deleted"), nil
		}, tool.WithAccess(tool.Mutating))
	b.turn = tool.NewSet(weather, hang, explode)
	b.registry = tool.NewSet(weather, hang, explode, deleteFile)
	return b
}

// unblock lets the hanging tool return; safe to call more than once.
func (b *toolbox) unblock() { b.once.Do(func() { close(b.release) }) }

// sleeps is the retry policy's Sleep: it records each wait and returns at
// once, so a Retry-After of seconds costs nothing.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

// recorder keeps the turn's events.
type recorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *recorder) Handle(e event.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

func (r *recorder) of(typ event.Type) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, e := range r.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// warned reports whether a warning with the code was emitted.
func (r *recorder) warned(code string) bool {
	for _, e := range r.of(event.Warning) {
		if e.Code == code {
			return true
		}
	}
	return false
}

// turnRun is everything one row's turn left behind, for the checks.
type turnRun struct {
	proto  string
	out    *loop.Outcome
	err    error
	reqs   []testkit.Captured
	stored []llm.Item   // the thread's items as read back from the store
	turn   *record.Turn // the turn's row after SaveTurn
	waits  []time.Duration
	events *recorder
	tools  *toolbox
}

// runTurn runs one turn of the row over the protocol: the real adapter
// against the mock server, wrapped in llm.WithRetry with a Sleep that does
// not wait, the real engine with the toolbox's tools, and a store on a
// temporary database as the journal.
func runTurn(t *testing.T, p protocol, rounds []testkit.Round) *turnRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()

	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	th, err := db.CreateThread(ctx, record.Thread{Settings: record.Settings{Model: p.name + ":mock"}, Title: "fault matrix"})
	if err != nil {
		t.Fatal(err)
	}
	// Claimed and ended as the session runtime does (ClaimTurn, SaveTurn).
	st := record.Turn{ID: loop.NewID("turn"), ThreadID: th.ID, Status: record.StatusRunning, Started: time.Now()}
	if _, err := db.ClaimTurn(ctx, st); err != nil {
		t.Fatal(err)
	}

	// The row's own transport, so its connections close with the row.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv, model := p.start(t, &http.Client{Transport: tr}, rounds)

	r := &turnRun{proto: p.name, events: &recorder{}, tools: newToolbox()}
	// Registered after the server, so it runs before the server closes:
	// the hanging tool's goroutine ends before the leak check.
	t.Cleanup(r.tools.unblock)
	var sl sleeps
	eng, err := loop.New(loop.Options{
		Model:        llm.WithRetry(model, llm.RetryPolicy{Sleep: sl.sleep}),
		ModelName:    "mock",
		System:       "You are a weather assistant. Use the tools.",
		Tools:        r.tools.turn,
		Journal:      db,
		Events:       r.events,
		ToolTimeouts: map[string]time.Duration{"hang": hangDeadline},
		Grace:        hangGrace,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.out, r.err = eng.Run(ctx, loop.Turn{
		ThreadID: th.ID,
		ID:       st.ID,
		Input:    []llm.Item{llm.UserText("What is the weather in Florence?")},
	})
	if r.out == nil {
		t.Fatalf("the turn returned no outcome: %v", r.err)
	}
	rec, err := r.out.Record()
	if err == nil {
		rec.ThreadID, rec.Started, rec.Ended = th.ID, st.Started, time.Now()
		err = db.SaveTurn(ctx, rec)
	}
	if err != nil {
		t.Fatalf("SaveTurn: %v", err)
	}
	r.reqs = srv.Requests()
	r.waits = sl.waits()
	if r.stored, err = db.Items(ctx, th.ID); err != nil {
		t.Fatalf("reading the thread's items back: %v", err)
	}
	turns, err := db.Load(ctx, th.ID)
	if err != nil {
		t.Fatalf("loading the thread: %v", err)
	}
	r.turn = turns.Last()
	return r
}

// checkInvariants checks every request the mock received: the mock's own
// check (for Anthropic it includes the API's message rules) and
// llm.CheckHistory on the history decoded from the wire.
func checkInvariants(t *testing.T, r *turnRun) {
	t.Helper()
	for i, c := range r.reqs {
		if c.Invariant != nil {
			t.Errorf("request %d: the mock's check: %v", i+1, c.Invariant)
		}
		if err := llm.CheckHistory(c.Items); err != nil {
			t.Errorf("request %d: history invariants of what went over the wire: %v", i+1, err)
		}
		if len(c.Items) == 0 {
			t.Errorf("request %d carried no history", i+1)
		}
	}
}

// checkStored checks that the store holds every item the turn produced, in
// order, by id and content, and that the stored history keeps the
// invariants and the turn's row says how it ended.
func checkStored(t *testing.T, r *turnRun) {
	t.Helper()
	got, want := r.stored, r.out.Items
	if len(got) != len(want) {
		t.Errorf("the store holds %d items, the turn produced %d:\nstored: %s\nturn:   %s", len(got), len(want), itemIDs(got), itemIDs(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.ID == "" || g.ID != w.ID || g.TurnID != w.TurnID || g.Role != w.Role || g.Origin != w.Origin {
			t.Errorf("item %d: stored %s/%s/%s/%q, the turn's %s/%s/%s/%q", i, g.ID, g.TurnID, g.Role, g.Origin, w.ID, w.TurnID, w.Role, w.Origin)
			continue
		}
		if gp, wp := partsJSON(t, g), partsJSON(t, w); gp != wp {
			t.Errorf("item %s: stored parts differ from the turn's:\nstored: %s\nturn:   %s", g.ID, gp, wp)
		}
	}
	if err := llm.CheckHistory(got); err != nil {
		t.Errorf("the stored history breaks the invariants: %v", err)
	}
	if tr := r.turn; tr == nil {
		t.Error("the store has no turn")
	} else if tr.Status != r.out.Status || tr.StopReason != r.out.StopReason || tr.Answer != r.out.Answer || tr.Rounds != r.out.Rounds {
		t.Errorf("the stored turn is %s/%s (%d rounds, answer %q), the outcome %s/%s (%d rounds, answer %q)",
			tr.Status, tr.StopReason, tr.Rounds, tr.Answer, r.out.Status, r.out.StopReason, r.out.Rounds, r.out.Answer)
	}
}

func partsJSON(t *testing.T, it llm.Item) string {
	t.Helper()
	b, err := json.Marshal(it.Parts)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itemIDs(items []llm.Item) string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID + ":" + it.Role.String()
	}
	return strings.Join(ids, " ")
}

// results returns the turn's results in order.
func (r *turnRun) results() []*llm.Result {
	var out []*llm.Result
	for i := range r.out.Items {
		if res := r.out.Items[i].Result(); res != nil {
			out = append(out, res)
		}
	}
	return out
}

// calls returns the turn's calls in order.
func (r *turnRun) calls() []*llm.Call {
	var out []*llm.Call
	for i := range r.out.Items {
		if r.out.Items[i].Role == llm.RoleAssistant {
			out = append(out, r.out.Items[i].Calls()...)
		}
	}
	return out
}

// directives returns the texts of the turn's directive items.
func (r *turnRun) directives() []string {
	var out []string
	for i := range r.out.Items {
		if r.out.Items[i].Origin == llm.OriginDirective {
			out = append(out, r.out.Items[i].Text())
		}
	}
	return out
}

// modelError returns the turn's error as a typed model error, failing the
// test when it is not one.
func (r *turnRun) modelError(t *testing.T) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(r.err, &e) {
		t.Fatalf("the turn's error %v (%T) is not an *llm.Error", r.err, r.err)
	}
	return e
}
