package cron

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/reinhq/rein/store"
)

// Queue is what a scheduler reads and claims; *store.Store is one.
type Queue interface {
	DueJobs(ctx context.Context, now time.Time) ([]store.Job, error)
	NextJobRun(ctx context.Context) (time.Time, bool, error)
	ClaimRun(ctx context.Context, id string, due, next, ran time.Time) (bool, error)
}

// Firing is one run of a job: the message to start a turn with in the
// job's thread.
type Firing struct {
	Job store.Job
	// Due is when the run was due.
	Due time.Time
	// Late says the run starts well after it was due: it fell due while no
	// scheduler was running (or this one was stopped).
	Late bool
	// Skipped counts the job's later runs that also fell due meanwhile;
	// they are not run, this one run stands for them.
	Skipped int
}

// Message is the text of the user message the run starts its turn with.
func (f Firing) Message() string {
	name := f.Job.Name
	if name == "" {
		name = f.Job.ID
	}
	head := fmt.Sprintf("[scheduled message %q, job %s, due %s]", name, f.Job.ID, f.Due.Format(time.RFC3339))
	if f.Late {
		head += " (late: the scheduler was not running when it fell due; it runs once now"
		if f.Skipped > 0 {
			head += fmt.Sprintf(", in place of %d more missed runs", f.Skipped)
		}
		head += ")"
	}
	return head + "\n" + f.Job.Message
}

// StartFunc starts a turn in f.Job.Thread with f.Message() as its input —
// or queues it behind a running turn. It should return once the turn is
// accepted, not when it ends.
type StartFunc func(ctx context.Context, f Firing) error

// DefaultPoll is how long a Scheduler sleeps at most without looking at
// the store.
const DefaultPoll = time.Second

// Scheduler runs due jobs. Each due run is claimed in the store before it
// starts, so two schedulers on one database never start the same run, and a
// run is started at most once: a run whose start fails is logged, not
// retried.
type Scheduler struct {
	Queue Queue
	Start StartFunc
	// Missed is told about each late run (what fell due while no scheduler
	// was running), after it is started, so it is reported rather than
	// silently dropped; nil logs it.
	Missed func(f Firing, startErr error)
	// Logger receives failures; nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time (tests); default time.Now.
	Now func() time.Time
	// Poll bounds how long the scheduler sleeps without looking at the
	// store, so a job another process adds runs within Poll of its time
	// (default 1 s: two indexed queries a second). Jobs added in this
	// process call Wake and run at their time.
	Poll time.Duration
	// LateAfter is how long after its time a run counts as late (default
	// one minute).
	LateAfter time.Duration

	once sync.Once
	wake chan struct{}
}

func (s *Scheduler) wakeCh() chan struct{} {
	s.once.Do(func() { s.wake = make(chan struct{}, 1) })
	return s.wake
}

// Wake makes a running scheduler look at the store now, as after the cron
// tool added a job in this process. It never blocks.
func (s *Scheduler) Wake() {
	select {
	case s.wakeCh() <- struct{}{}:
	default:
	}
}

// Run starts the runs that fell due while no scheduler ran (each once,
// reported through Missed), then every run as it falls due, until ctx is
// done. It returns ctx's error.
func (s *Scheduler) Run(ctx context.Context) error {
	wake := s.wakeCh()
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	poll := s.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	for {
		s.Tick(ctx)
		wait := poll
		if next, ok, err := s.Queue.NextJobRun(ctx); err != nil {
			log.Warn("cron: reading the next run", "err", err)
		} else if ok {
			wait = min(wait, max(next.Sub(now()), 0))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Tick starts the runs due now and returns them. Run calls it; a server
// that drives time itself may call it instead.
func (s *Scheduler) Tick(ctx context.Context) []Firing {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	nowFn := s.Now
	if nowFn == nil {
		nowFn = time.Now
	}
	lateAfter := s.LateAfter
	if lateAfter <= 0 {
		lateAfter = time.Minute
	}
	now := nowFn()
	due, err := s.Queue.DueJobs(ctx, now)
	if err != nil {
		log.Warn("cron: reading due jobs", "err", err)
		return nil
	}
	var fired []Firing
	for _, j := range due {
		next, skipped := after(j, j.Next, now)
		ok, err := s.Queue.ClaimRun(ctx, j.ID, j.Next, next, now)
		if err != nil {
			log.Warn("cron: claiming a run", "job", j.ID, "err", err)
			continue
		}
		if !ok {
			continue // another scheduler has it, or it was cancelled
		}
		f := Firing{Job: j, Due: j.Next, Late: now.Sub(j.Next) > lateAfter, Skipped: skipped}
		startErr := s.Start(ctx, f)
		if startErr != nil {
			log.Warn("cron: starting a scheduled turn", "job", j.ID, "thread", j.Thread, "err", startErr)
		}
		if f.Late {
			if s.Missed != nil {
				s.Missed(f, startErr)
			} else {
				log.Warn("cron: ran a job late, once, for what fell due while no scheduler was running",
					"job", j.ID, "thread", j.Thread, "due", f.Due, "skipped", f.Skipped)
			}
		}
		fired = append(fired, f)
	}
	return fired
}
