package llm

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how transient model errors are retried (DESIGN §2.6).
// The zero value retries with the defaults.
type RetryPolicy struct {
	// Attempts is the number of tries in all, the first included (default 5).
	// 1 disables retries.
	Attempts int
	// Base is the first backoff (default 200 ms); each later one doubles.
	Base time.Duration
	// MaxDelay caps a single wait (default 30 s). A server's Retry-After wins
	// over the backoff but is capped too.
	MaxDelay time.Duration
	// Sleep waits; tests replace it. The default honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return 5
	}
	return p.Attempts
}

// Delay returns the wait before attempt n (2 for the first retry).
func (p RetryPolicy) Delay(n int, err error) time.Duration {
	base := p.Base
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	maxd := p.MaxDelay
	if maxd <= 0 {
		maxd = 30 * time.Second
	}
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return min(e.RetryAfter, maxd)
	}
	d := base << (n - 2)
	// Jitter in [0.8, 1.2) keeps many clients from retrying in step.
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(d, maxd)
}

func (p RetryPolicy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WithRetry returns a model that retries transient errors of m while nothing
// of the call has been shown: no text, reasoning or call event delivered.
// After that an error surfaces with Shown set, so the caller knows it is
// retryable only by redoing the round. Each retry is announced with an
// EventRetry before the new attempt's events.
func WithRetry(m Model, p RetryPolicy) Model {
	if p.attempts() <= 1 {
		return m
	}
	return &retryModel{m: m, p: p}
}

type retryModel struct {
	m Model
	p RetryPolicy
}

// OutputMode passes on how the wrapped model takes a structured answer.
func (r *retryModel) OutputMode() OutputMode { return OutputModeOf(r.m) }

// ReadsHistory passes on whether the wrapped model reads Request.History:
// a retry sends the same request again.
func (r *retryModel) ReadsHistory() bool { return ReadsHistory(r.m) }

func (r *retryModel) Stream(ctx context.Context, req *Request) (Stream, error) {
	s := &retryStream{ctx: ctx, req: req, r: r, attempt: 1}
	inner, err := r.m.Stream(ctx, req)
	if err != nil {
		if !Transient(err) {
			return nil, err
		}
		s.pendingErr = err
	}
	s.inner = inner
	return s, nil
}

type retryStream struct {
	ctx        context.Context
	req        *Request
	r          *retryModel
	inner      Stream
	attempt    int
	shown      bool
	pendingErr error // a transient error to retry on the next Recv
	reopen     bool  // wait, then open a new attempt on the next Recv
	wait       time.Duration
}

func (s *retryStream) Recv() (Event, error) {
	for {
		if s.reopen {
			s.reopen = false
			if err := s.r.p.sleep(s.ctx, s.wait); err != nil {
				return Event{}, err
			}
			inner, err := s.r.m.Stream(s.ctx, s.req)
			if err != nil {
				if !Transient(err) {
					return Event{}, err
				}
				s.pendingErr = err
			}
			s.inner = inner
		}
		if s.pendingErr != nil {
			err := s.pendingErr
			s.pendingErr = nil
			ev, rerr := s.retry(err)
			if rerr != nil {
				return Event{}, rerr
			}
			// Announce the retry before waiting, so a UI can say
			// "reconnecting 2/5" during the backoff.
			return ev, nil
		}
		if s.inner == nil {
			return Event{}, io.EOF
		}
		ev, err := s.inner.Recv()
		if err == nil {
			switch ev.Kind {
			case EventText, EventReasoning, EventCallStart, EventCallDelta, EventCallDone:
				s.shown = true
			}
			return ev, nil
		}
		if errors.Is(err, io.EOF) {
			return ev, err
		}
		if s.shown || !Transient(err) {
			return Event{}, markShown(err, s.shown)
		}
		s.pendingErr = err
	}
}

// retry schedules the next attempt and returns the event announcing it, or
// the cause when no attempts are left.
func (s *retryStream) retry(cause error) (Event, error) {
	max := s.r.p.attempts()
	if s.attempt >= max {
		return Event{}, cause
	}
	s.attempt++
	if s.inner != nil {
		s.inner.Close()
		s.inner = nil
	}
	s.wait = s.r.p.Delay(s.attempt, cause)
	s.reopen = true
	return Event{Kind: EventRetry, Retry: &RetryInfo{Attempt: s.attempt, Max: max, Delay: s.wait, Err: cause}}, nil
}

func markShown(err error, shown bool) error {
	if !shown {
		return err
	}
	var e *Error
	if errors.As(err, &e) && !e.Shown {
		c := *e
		c.Shown = true
		return &c
	}
	return err
}

func (s *retryStream) Close() error {
	if s.inner != nil {
		return s.inner.Close()
	}
	return nil
}
