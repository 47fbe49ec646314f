package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// relation between two calls of a round, judged from their timings.
type relation int

const (
	overlap relation = iota // they ran at the same time
	ordered                 // the later call started after the earlier ended
)

func (r relation) String() string {
	if r == overlap {
		return "overlap"
	}
	return "run in order"
}

func TestConflictsDecideWhatOverlaps(t *testing.T) {
	const step = 60 * time.Millisecond
	type pair struct {
		a, b int
		want relation
	}
	tests := []struct {
		name  string
		calls []llm.Call
		pairs []pair
	}{
		{"reads of one key overlap", []llm.Call{
			{ID: "r1", Name: "k", Args: `{"read":["f"]}`},
			{ID: "r2", Name: "k", Args: `{"read":["f"],"n":2}`},
		}, []pair{{0, 1, overlap}}},
		{"a write then a read of its key run in order", []llm.Call{
			{ID: "w", Name: "k", Args: `{"write":["f"]}`},
			{ID: "r", Name: "k", Args: `{"read":["f"]}`},
		}, []pair{{0, 1, ordered}}},
		{"a read then a write of its key run in order", []llm.Call{
			{ID: "r", Name: "k", Args: `{"read":["f"]}`},
			{ID: "w", Name: "k", Args: `{"write":["f"]}`},
		}, []pair{{0, 1, ordered}}},
		{"two writes of one key run in order", []llm.Call{
			{ID: "w1", Name: "k", Args: `{"write":["f"]}`},
			{ID: "w2", Name: "k", Args: `{"write":["f"],"n":2}`},
		}, []pair{{0, 1, ordered}}},
		{"writes of different keys overlap", []llm.Call{
			{ID: "w1", Name: "k", Args: `{"write":["f"]}`},
			{ID: "w2", Name: "k", Args: `{"write":["g"]}`},
			{ID: "r", Name: "k", Args: `{"read":["h"]}`},
		}, []pair{{0, 1, overlap}, {0, 2, overlap}, {1, 2, overlap}}},
		{"a write orders only the calls of its key", []llm.Call{
			{ID: "w", Name: "k", Args: `{"write":["f"]}`},
			{ID: "r1", Name: "k", Args: `{"read":["g"]}`},
			{ID: "r2", Name: "k", Args: `{"read":["f"]}`},
		}, []pair{{0, 1, overlap}, {0, 2, ordered}}},
		{"an exclusive call runs alone", []llm.Call{
			{ID: "r1", Name: "k", Args: `{"read":["f"]}`},
			{ID: "r2", Name: "k", Args: `{"read":["g"]}`},
			{ID: "x", Name: "k", Args: `{"exclusive":true}`},
			{ID: "r3", Name: "k", Args: `{"read":["h"]}`},
			{ID: "w", Name: "k", Args: `{"write":["i"]}`},
		}, []pair{{0, 1, overlap}, {0, 2, ordered}, {1, 2, ordered}, {2, 3, ordered}, {2, 4, ordered}, {3, 4, overlap}}},
		{"calls of one mutating tool without keys run in order", []llm.Call{
			{ID: "m1", Name: "mut", Args: `{"n":1}`},
			{ID: "m2", Name: "mut", Args: `{"n":2}`},
			{ID: "o", Name: "mut2", Args: `{}`},
		}, []pair{{0, 1, ordered}, {0, 2, overlap}}},
		{"read-only tools without keys overlap", []llm.Call{
			{ID: "a", Name: "ro", Args: `{"n":1}`},
			{ID: "b", Name: "ro", Args: `{"n":2}`},
		}, []pair{{0, 1, overlap}}},
		{"tools that declare no access are exclusive", []llm.Call{
			{ID: "a", Name: "ro", Args: `{}`},
			{ID: "e", Name: "plain", Args: `{}`},
			{ID: "b", Name: "ro", Args: `{"n":3}`},
		}, []pair{{0, 1, ordered}, {1, 2, ordered}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mk := func(name string, a tool.Access) *fake {
				return &fake{spec: tool.Spec{Name: name, Access: a}, run: sleeper(step)}
			}
			set := tool.NewSet(keyed{mk("k", tool.Mutating)}, mk("mut", tool.Mutating), mk("mut2", tool.Mutating),
				mk("ro", tool.ReadOnly), mk("plain", tool.Exclusive))
			b := runRound(t, New(Config{Tools: set}), tt.calls)
			checkPairing(t, b, tt.calls)
			for i, res := range b.Results {
				if res.Status != llm.ResultOK {
					t.Fatalf("call %d: %s %q", i, res.Status, res.Content)
				}
			}
			for _, p := range tt.pairs {
				ta, tb := b.Timings[p.a], b.Timings[p.b]
				got := overlap
				if !tb.Start.Before(ta.End) || !ta.Start.Before(tb.End) {
					got = ordered
				}
				if got == ordered && tb.Start.Before(ta.End) {
					t.Errorf("calls %d and %d ran in reverse order", p.a, p.b)
				}
				if got != p.want {
					t.Errorf("calls %d and %d: %v, want %v (a %v–%v, b %v–%v)", p.a, p.b, got, p.want,
						ta.Start.Format(".000"), ta.End.Format(".000"), tb.Start.Format(".000"), tb.End.Format(".000"))
				}
			}
		})
	}
}

func TestConflictsRule(t *testing.T) {
	k := func(r, w []string, x bool) tool.Keys { return tool.Keys{Reads: r, Writes: w, Exclusive: x} }
	f := []string{"f"}
	g := []string{"g"}
	tests := []struct {
		name string
		a, b tool.Keys
		want bool
	}{
		{"no keys", k(nil, nil, false), k(nil, nil, false), false},
		{"shared read", k(f, nil, false), k(f, nil, false), false},
		{"write and read", k(nil, f, false), k(f, nil, false), true},
		{"read and write", k(f, nil, false), k(nil, f, false), true},
		{"write and write", k(nil, f, false), k(nil, f, false), true},
		{"different keys", k(g, f, false), k(f, g, false), true},
		{"disjoint", k(g, g, false), k(f, f, false), false},
		{"exclusive first", k(nil, nil, true), k(nil, nil, false), true},
		{"exclusive second", k(nil, nil, false), k(nil, nil, true), true},
	}
	for _, tt := range tests {
		if got := conflicts(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: conflicts = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A call is only waited on by a later call that conflicts with it, whose
// Add makes the call's done channel then: an earlier call already settled
// by that time is not waited for, one still running is.
func TestACallWaitsOnlyForConflictingCallsStillRunning(t *testing.T) {
	release := make(chan struct{})
	k := keyed{&fake{spec: tool.Spec{Name: "k", Access: tool.Mutating}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		if c.ID == "slow" {
			<-release
		}
		return tool.Output{Text: "ran " + c.ID}, nil
	}}}
	r := New(Config{Tools: tool.NewSet(k)}).Begin(context.Background(), RoundInfo{})
	settled := func(i int) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.calls[i].settled
	}
	r.Add(llm.Call{ID: "fast", Name: "k", Args: `{"write":["f"]}`})
	for !settled(0) {
		time.Sleep(time.Millisecond)
	}
	// Conflicts with "fast", settled already: runs at once.
	r.Add(llm.Call{ID: "after", Name: "k", Args: `{"write":["f"],"n":2}`})
	r.Add(llm.Call{ID: "slow", Name: "k", Args: `{"write":["g"]}`})
	// Conflicts with "slow", still running: waits for it.
	r.Add(llm.Call{ID: "last", Name: "k", Args: `{"write":["g"],"n":2}`})
	for !settled(1) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if settled(3) {
		t.Error("a call ran before the running call it conflicts with ended")
	}
	close(release)
	b := r.Finish()
	for i, res := range b.Results {
		if res.Status != llm.ResultOK {
			t.Errorf("call %d: %s %q", i, res.Status, res.Content)
		}
	}
	if !b.Timings[3].Start.After(b.Timings[2].End) && !b.Timings[3].Start.Equal(b.Timings[2].End) {
		t.Errorf("the last call started at %v, before the slow one ended at %v", b.Timings[3].Start, b.Timings[2].End)
	}
}
