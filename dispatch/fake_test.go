package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is a scripted tool: run decides what a call does; runs counts the
// calls that reached it.
type fake struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
	runs atomic.Int32
}

func (f *fake) Spec() tool.Spec { return f.spec }

func (f *fake) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	f.runs.Add(1)
	if f.run == nil {
		return tool.Output{Text: "ok " + c.ID}, nil
	}
	return f.run(ctx, c)
}

// keyed is a fake whose calls declare keys from their arguments:
// {"read":["a"],"write":["b"],"exclusive":true}.
type keyed struct{ *fake }

func (k keyed) Keys(args json.RawMessage) tool.Keys {
	var a struct {
		Read      []string `json:"read"`
		Write     []string `json:"write"`
		Exclusive bool     `json:"exclusive"`
	}
	_ = json.Unmarshal(args, &a)
	return tool.Keys{Reads: a.Read, Writes: a.Write, Exclusive: a.Exclusive}
}

// sleeper returns a tool run that sleeps d (or until cancelled).
func sleeper(d time.Duration) func(ctx context.Context, c tool.Call) (tool.Output, error) {
	return func(ctx context.Context, c tool.Call) (tool.Output, error) {
		select {
		case <-time.After(d):
			return tool.Output{Text: "slept " + c.ID}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
}

func (r *recorder) Handle(e event.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) of(t event.Type) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func calls(name string, args ...string) []llm.Call {
	out := make([]llm.Call, len(args))
	for i, a := range args {
		out[i] = llm.Call{ID: fmt.Sprintf("call_%d", i), Name: name, Args: a}
	}
	return out
}

// runRound adds the calls and finishes the round.
func runRound(t testing.TB, d *Dispatcher, cs []llm.Call) *Batch {
	t.Helper()
	r := d.Begin(context.Background(), RoundInfo{ThreadID: "th", TurnID: "tu", Round: 3})
	for _, c := range cs {
		r.Add(c)
	}
	return r.Finish()
}

// checkPairing fails unless b has one result per call, in call order.
func checkPairing(t *testing.T, b *Batch, cs []llm.Call) {
	t.Helper()
	if len(b.Results) != len(cs) || len(b.Timings) != len(cs) {
		t.Fatalf("got %d results and %d timings for %d calls", len(b.Results), len(b.Timings), len(cs))
	}
	for i, c := range cs {
		if got := b.Results[i]; got.CallID != c.ID || got.Name != c.Name {
			t.Errorf("result %d answers %s/%s, want %s/%s", i, got.CallID, got.Name, c.ID, c.Name)
		}
		if b.Results[i].Status == "" {
			t.Errorf("result %d has no status", i)
		}
	}
}
