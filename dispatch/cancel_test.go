package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

// stubborn is a tool that writes partial output, then ignores its context
// until released.
type stubborn struct {
	started chan struct{} // closed when the first call starts
	release chan struct{}
	once    sync.Once
}

func newStubborn() *stubborn {
	return &stubborn{started: make(chan struct{}), release: make(chan struct{})}
}

func (s *stubborn) Spec() tool.Spec {
	return tool.Spec{Name: "stubborn", Access: tool.Mutating}
}

func (s *stubborn) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	fmt.Fprintf(c.Partial, "step 1 done\nkey sk-abc123DEF456ghi789JKL012\n")
	s.once.Do(func() { close(s.started) })
	<-s.release
	return tool.Output{Text: "finished anyway"}, nil
}

func TestCancellationEndsEveryTool(t *testing.T) {
	const grace = 150 * time.Millisecond
	st := newStubborn()
	politeStarted := make(chan struct{})
	polite := &fake{spec: tool.Spec{Name: "polite", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		fmt.Fprint(c.Partial, "half of it")
		close(politeStarted)
		<-ctx.Done()
		return tool.Output{}, ctx.Err()
	}}
	rd := redact.New(redact.Options{})
	d := New(Config{Tools: tool.NewSet(st, polite), Grace: grace, Redact: rd.Redact})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := d.Begin(ctx, RoundInfo{})
	cs := []llm.Call{
		{ID: "s", Name: "stubborn", Args: `{}`},
		{ID: "p", Name: "polite", Args: `{}`},
		// Same tool, a write: waits for "s" and never starts.
		{ID: "w", Name: "stubborn", Args: `{"n":2}`},
	}
	for _, c := range cs {
		r.Add(c)
	}
	<-st.started
	<-politeStarted
	time.Sleep(200 * time.Millisecond) // so the stubborn call has run a while
	cancelled := time.Now()
	cancel()
	b := r.Finish()
	took := time.Since(cancelled)
	if took < grace || took > grace+time.Second {
		t.Errorf("Finish returned %v after the cancellation; want the grace period, %v", took, grace)
	}
	checkPairing(t, b, cs)

	s := b.Results[0]
	if s.Status != llm.ResultAborted || !strings.HasPrefix(s.Content, "aborted by user after 0.") ||
		!strings.Contains(s.Content, "partial output:\nstep 1 done") {
		t.Errorf("the tool that ignored cancellation: %+v", s)
	}
	if strings.Contains(s.Content, "sk-abc") {
		t.Errorf("partial output not redacted: %q", s.Content)
	}
	if p := b.Results[1]; p.Status != llm.ResultAborted || !strings.Contains(p.Content, "aborted by user after") || !strings.Contains(p.Content, "half of it") {
		t.Errorf("the tool that stopped: %+v", p)
	}
	if w := b.Results[2]; w.Status != llm.ResultAborted || !strings.Contains(w.Content, "not run") || !b.Timings[2].Start.IsZero() {
		t.Errorf("the call that had not started: %+v", w)
	}
	if b.Timings[0].End.IsZero() || b.Timings[0].End.Before(cancelled) {
		t.Errorf("abandoned call timing %+v", b.Timings[0])
	}

	// The abandoned goroutine exits once its tool returns.
	close(st.release)
	goleak.VerifyNone(t)
}

func TestCancellationWhileStreamingCountsTheGraceFromTheCancel(t *testing.T) {
	const grace = 200 * time.Millisecond
	st := newStubborn()
	d := New(Config{Tools: tool.NewSet(st), Grace: grace})
	ctx, cancel := context.WithCancel(context.Background())
	r := d.Begin(ctx, RoundInfo{})
	r.Add(llm.Call{ID: "s", Name: "stubborn", Args: `{}`})
	<-st.started
	cancelled := time.Now()
	cancel()
	// The stream takes a while to notice; the grace period is already running.
	time.Sleep(grace / 2)
	b := r.Finish()
	if took := time.Since(cancelled); took > grace+grace/2 {
		t.Errorf("Finish returned %v after the cancellation, want about %v", took, grace)
	}
	if b.Results[0].Status != llm.ResultAborted {
		t.Errorf("got %+v", b.Results[0])
	}
	close(st.release)
	goleak.VerifyNone(t)
}

// A Watch tells whichever round is in progress of the cancellation, as a
// round's own hook would: the grace period counts from the cancel, and a
// round begun after it runs nothing.
func TestAWatchTellsTheRoundInProgress(t *testing.T) {
	const grace = 200 * time.Millisecond
	st := newStubborn()
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	d := New(Config{Tools: tool.NewSet(st, ro), Grace: grace})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWatch(ctx)
	defer w.Stop()

	r := d.BeginWatched(w, RoundInfo{Round: 1})
	r.Add(llm.Call{ID: "a", Name: "ro", Args: `{}`})
	if b := r.Finish(); b.Results[0].Status != llm.ResultOK {
		t.Fatalf("round 1: %+v", b.Results[0])
	}

	r = d.BeginWatched(w, RoundInfo{Round: 2})
	r.Add(llm.Call{ID: "s", Name: "stubborn", Args: `{}`})
	<-st.started
	cancelled := time.Now()
	cancel()
	// The stream takes a while to notice; the grace period is already running.
	time.Sleep(grace / 2)
	b := r.Finish()
	if took := time.Since(cancelled); took > grace+grace/2 {
		t.Errorf("round 2: Finish returned %v after the cancellation, want about %v", took, grace)
	}
	if b.Results[0].Status != llm.ResultAborted {
		t.Errorf("round 2: got %+v", b.Results[0])
	}

	r = d.BeginWatched(w, RoundInfo{Round: 3})
	r.Add(llm.Call{ID: "b", Name: "ro", Args: `{}`})
	if b := r.Finish(); b.Results[0].Status != llm.ResultAborted || ro.runs.Load() != 1 {
		t.Errorf("round 3, begun after the cancellation: got %+v after %d runs", b.Results[0], ro.runs.Load())
	}
	close(st.release)
	goleak.VerifyNone(t)
}

func TestCallsAddedAfterCancellationDoNotRun(t *testing.T) {
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := New(Config{Tools: tool.NewSet(ro)}).Begin(ctx, RoundInfo{})
	r.Add(llm.Call{ID: "a", Name: "ro", Args: `{}`})
	b := r.Finish()
	if b.Results[0].Status != llm.ResultAborted || ro.runs.Load() != 0 {
		t.Errorf("got %+v after %d runs", b.Results[0], ro.runs.Load())
	}
}

func TestAToolIgnoringItsDeadlineIsAbandoned(t *testing.T) {
	const grace = 80 * time.Millisecond
	st := newStubborn()
	after := &fake{spec: tool.Spec{Name: "after", Access: tool.Exclusive}}
	d := New(Config{Tools: tool.NewSet(st, after), Grace: grace, Timeouts: map[string]time.Duration{"stubborn": 50 * time.Millisecond}})
	cs := []llm.Call{{ID: "s", Name: "stubborn", Args: `{}`}, {ID: "x", Name: "after", Args: `{}`}}
	start := time.Now()
	b := runRound(t, d, cs)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the round took %v", took)
	}
	checkPairing(t, b, cs)
	if r := b.Results[0]; r.Status != llm.ResultError || !strings.Contains(r.Content, "did not finish within its deadline of 50ms") ||
		!strings.Contains(r.Content, "abandoned") || !strings.Contains(r.Content, "step 1 done") {
		t.Errorf("got %+v", r)
	}
	// The exclusive call would have overlapped with a tool still running.
	if r := b.Results[1]; r.Status != llm.ResultNotRun || !strings.Contains(r.Content, "did not finish") || after.runs.Load() != 0 {
		t.Errorf("the call after the abandoned one: %+v", r)
	}
	close(st.release)
	goleak.VerifyNone(t)
}

func TestFinishTwiceReturnsTheSameBatch(t *testing.T) {
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	r := New(Config{Tools: tool.NewSet(ro)}).Begin(context.Background(), RoundInfo{})
	r.Add(llm.Call{ID: "a", Name: "ro", Args: `{}`})
	b := r.Finish()
	r.Add(llm.Call{ID: "b", Name: "ro", Args: `{}`})
	if b2 := r.Finish(); b2 != b || len(b.Results) != 1 {
		t.Errorf("second Finish: %+v", b2)
	}
}

// TestALoneCallRunAfterTheStreamEndedIsStillAbandoned: a round whose only
// call runs once the model's stream has ended (calls held until Finish, or
// a pause tool, which runs last) has nothing to overlap with, yet running
// it on the caller's goroutine would leave no one to abandon it: a tool
// that ignores its deadline or the cancellation must not hold the round
// past the grace period.
func TestALoneCallRunAfterTheStreamEndedIsStillAbandoned(t *testing.T) {
	const grace = 100 * time.Millisecond
	tests := []struct {
		name    string
		pauses  bool // the tool is a pause tool (runs in Finish after the rest)
		timeout time.Duration
		cancel  bool // the round is cancelled once the tool runs
		want    llm.ResultStatus
		text    string
	}{
		{name: "held call ignoring the cancellation", cancel: true, want: llm.ResultAborted, text: "aborted by user after"},
		{name: "held call ignoring its deadline", timeout: 50 * time.Millisecond, want: llm.ResultError, text: "did not finish within its deadline of 50ms"},
		{name: "pause call ignoring the cancellation", pauses: true, cancel: true, want: llm.ResultAborted, text: "aborted by user after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			started := make(chan struct{})
			stubborn := &fake{spec: tool.Spec{Name: "stubborn", Access: tool.ReadOnly, Pauses: tt.pauses, Timeout: tt.timeout},
				run: func(context.Context, tool.Call) (tool.Output, error) {
					close(started)
					<-release
					return tool.Output{Text: "finished anyway"}, nil
				}}
			d := New(Config{Tools: tool.NewSet(stubborn), Grace: grace, NoEarlyStart: true})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := d.Begin(ctx, RoundInfo{})
			r.Add(llm.Call{ID: "s", Name: "stubborn", Args: `{}`})
			done := make(chan *Batch, 1)
			go func() { done <- r.Finish() }()
			<-started
			if tt.cancel {
				cancel()
			}
			select {
			case b := <-done:
				if got := b.Results[0]; got.Status != tt.want || !strings.Contains(got.Content, tt.text) {
					t.Errorf("got %+v, want %s with %q", got, tt.want, tt.text)
				}
				close(release)
			case <-time.After(grace + 2*time.Second):
				t.Error("Finish did not return after the grace period: the round waits on a tool that ignores it")
				close(release)
				<-done
			}
			goleak.VerifyNone(t)
		})
	}
}
