package dispatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

type ctxKey struct{}

// TestAToolsContextIsTheRoundsWithItsDeadline: whenever a tool first asks
// its context (at once, only after its deadline, or after its call ended),
// it sees what a context.WithDeadline made at the call's start shows: the
// round's values, the deadline, DeadlineExceeded (and as the cause) once
// past it, a derived context cancelled with it, and Canceled once the call
// ended.
func TestAToolsContextIsTheRoundsWithItsDeadline(t *testing.T) {
	const timeout = 40 * time.Millisecond
	type seen struct {
		value    any
		deadline time.Duration
		err      error
		cause    error
		derived  error
	}
	tests := []struct {
		name string
		run  func(ctx context.Context, s *seen) error
		// status is the call's result status.
		status llm.ResultStatus
		want   seen
	}{
		{
			name: "asks at once and waits for the deadline",
			run: func(ctx context.Context, s *seen) error {
				s.value = ctx.Value(ctxKey{})
				dl, ok := ctx.Deadline()
				if ok {
					s.deadline = time.Until(dl)
				}
				d, cancel := context.WithCancel(ctx)
				defer cancel()
				<-d.Done()
				s.err, s.cause, s.derived = ctx.Err(), context.Cause(ctx), d.Err()
				return ctx.Err()
			},
			status: llm.ResultError,
			want:   seen{value: "v", deadline: timeout, err: context.DeadlineExceeded, cause: context.DeadlineExceeded, derived: context.DeadlineExceeded},
		},
		{
			name: "asks only after its deadline",
			run: func(ctx context.Context, s *seen) error {
				time.Sleep(timeout + 20*time.Millisecond)
				s.value, s.err, s.cause = ctx.Value(ctxKey{}), ctx.Err(), context.Cause(ctx)
				select {
				case <-ctx.Done():
				default:
					return errors.New("Done is not closed past the deadline")
				}
				return nil
			},
			status: llm.ResultOK,
			want:   seen{value: "v", err: context.DeadlineExceeded, cause: context.DeadlineExceeded},
		},
		{
			name: "fails past its deadline without asking",
			run: func(ctx context.Context, s *seen) error {
				time.Sleep(timeout + 20*time.Millisecond)
				return errors.New("gave up")
			},
			status: llm.ResultError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			var kept context.Context
			f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly, Timeout: timeout}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
				kept = ctx
				if err := tt.run(ctx, &s); err != nil {
					return tool.Output{}, err
				}
				return tool.Output{Text: "ok"}, nil
			}}
			d := New(Config{Tools: tool.NewSet(f), Grace: time.Minute})
			ctx := context.WithValue(context.Background(), ctxKey{}, "v")
			r := d.Begin(ctx, RoundInfo{})
			r.Add(llm.Call{ID: "c", Name: "t", Args: `{}`})
			res := r.Finish().Results[0]
			if res.Status != tt.status {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Content, tt.status)
			}
			if tt.status == llm.ResultError && tt.name != "asks only after its deadline" && !strings.Contains(res.Content, "did not finish within its deadline") {
				t.Errorf("result %q does not say the deadline passed", res.Content)
			}
			if s.value != tt.want.value || !errors.Is(s.err, tt.want.err) || !errors.Is(s.cause, tt.want.cause) || !errors.Is(s.derived, tt.want.derived) {
				t.Errorf("the tool saw %+v, want %+v", s, tt.want)
			}
			if tt.want.deadline > 0 && (s.deadline <= 0 || s.deadline > tt.want.deadline) {
				t.Errorf("deadline in %s, want in (0, %s]", s.deadline, tt.want.deadline)
			}
			// A context kept past the call is done: Canceled when the call
			// ended first, DeadlineExceeded when the deadline did.
			if err := kept.Err(); err == nil {
				t.Errorf("the kept context is not done after the call: %v", err)
			}
		})
	}
}

// TestAContextAskedForOnlyAfterTheCallEndedIsCancelled: a tool that keeps
// its context and first uses it after its call ended sees it cancelled.
func TestAContextAskedForOnlyAfterTheCallEndedIsCancelled(t *testing.T) {
	var kept context.Context
	f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		kept = ctx
		return tool.Output{Text: "ok"}, nil
	}}
	b := runRound(t, New(Config{Tools: tool.NewSet(f)}), calls("t", `{}`))
	if b.Results[0].Status != llm.ResultOK {
		t.Fatal(b.Results[0])
	}
	select {
	case <-kept.Done():
	case <-time.After(time.Second):
		t.Fatal("Done is not closed")
	}
	if !errors.Is(kept.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", kept.Err())
	}
}

// TestAToolThatNeverAsksItsContextCostsNoContext: the call's deadline
// context (a timer, the context, its registration with the round's) is
// made only when the tool asks its context something.
func TestAToolThatNeverAsksItsContextCostsNoContext(t *testing.T) {
	round := func(asks bool) float64 {
		f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
			if asks {
				_ = ctx.Err()
			}
			return tool.Output{Text: "ok"}, nil
		}}
		d := New(Config{Tools: tool.NewSet(f)})
		c := llm.Call{ID: "c", Name: "t", Args: `{}`}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		return testing.AllocsPerRun(200, func() {
			r := d.Begin(ctx, RoundInfo{})
			r.Add(c)
			r.Finish()
		})
	}
	ignores, asks := round(false), round(true)
	if asks-ignores < 3 {
		t.Fatalf("a round whose tool asks its context: %.1f allocations; one whose tool does not: %.1f; want at least 3 fewer", asks, ignores)
	}
}
